-- snowflake 1.4.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.4'" to load this file. \quit

-- Time partitions keyed by the ID (doc/clients.md, "Time partitions").
-- How many IDs an interval spans in this node's layout: one millisecond is
-- the distance between the smallest IDs of two consecutive milliseconds,
-- 2^22 in the default layout, so one day is 86400000 << 22. Written in SQL
-- over snowflake_min_id(), so that it follows the layout as min_id does.
CREATE FUNCTION snowflake_id_span(span interval) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT round(extract(epoch FROM span) * 1000)::bigint
           * (snowflake_min_id(epoch + interval '1 millisecond') - snowflake_min_id(epoch))
      FROM snowflake_timestamp(0) AS epoch
$$;
COMMENT ON FUNCTION snowflake_id_span(interval) IS
    'The number of IDs an interval spans in this node''s layout (one day: 86400000 << 22 by default), for partitions by ID one interval wide; a month counts 30 days, as extract(epoch) counts it';
