-- snowflake 1.2: snowflake_convert_column takes its table lock first.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.2'" to load this file. \quit

-- 1.1 read the largest key before ALTER TABLE locked the table: a row
-- committed in between, above every new ID, went unseen. The same function,
-- with the lock taken before anything is read.
CREATE OR REPLACE FUNCTION snowflake_convert_column(rel regclass, col name) RETURNS void
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    extension_schema name;
    column_type regtype;
    is_identity boolean;
    default_expression text;
    sequence_name text;
    largest bigint;
    first_new_id bigint;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = rel) NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '% is not a table', rel
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'snowflake_convert_column converts a column of a table.';
    END IF;

    -- The lock ALTER TABLE takes, taken first: no row can be written between
    -- reading the largest value and changing the default (and no lock upgrade
    -- can deadlock with another conversion).
    EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', rel);

    SELECT a.atttypid, a.attidentity <> '', pg_get_expr(d.adbin, d.adrelid)
      INTO column_type, is_identity, default_expression
      FROM pg_attribute a
      LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE a.attrelid = rel AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation % does not exist', col, rel
            USING ERRCODE = 'undefined_column',
                  HINT = 'Name an existing bigserial or identity column.';
    END IF;

    IF column_type <> 'bigint'::regtype THEN
        RAISE EXCEPTION 'column "%" of relation % is not bigint', col, rel
            USING ERRCODE = 'datatype_mismatch',
                  DETAIL = format('Its type is %s; snowflake IDs need bigint.', column_type),
                  HINT = format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint first.', rel, col);
    END IF;

    SELECT extnamespace::regnamespace::name INTO extension_schema
      FROM pg_extension WHERE extname = 'snowflake';
    IF default_expression ~ 'snowflake_nextval\(\)' THEN
        RAISE EXCEPTION 'column "%" of relation % already uses snowflake_nextval()', col, rel
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its default is %s.', default_expression),
                  HINT = 'There is nothing to convert.';
    END IF;

    sequence_name := pg_get_serial_sequence(rel::text, col);
    IF NOT is_identity AND (sequence_name IS NULL
            OR default_expression IS DISTINCT FROM
               format('nextval(%L::regclass)', sequence_name::regclass)) THEN
        RAISE EXCEPTION 'column "%" of relation % is not a serial or identity column', col, rel
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its default is %s.', coalesce(default_expression, 'none')),
                  HINT = format('For any other column, ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %I.snowflake_nextval().',
                                rel, col, extension_schema);
    END IF;

    -- The rows keep their keys, so every new ID must be above them.
    EXECUTE format('SELECT max(%I) FROM %s', col, rel) INTO largest;
    EXECUTE format('SELECT %I.snowflake_min_id(clock_timestamp())', extension_schema)
        INTO first_new_id;
    IF largest >= first_new_id THEN
        RAISE EXCEPTION 'column "%" of relation % holds values that new snowflake IDs could repeat', col, rel
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its largest value is %s; new IDs start at %s.', largest, first_new_id),
                  HINT = 'Renumber those rows first, or keep the column as it is.';
    END IF;

    IF is_identity THEN
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', rel, col);
    END IF;
    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %I.snowflake_nextval()',
                   rel, col, extension_schema);
    IF NOT is_identity THEN
        EXECUTE format('DROP SEQUENCE %s', sequence_name);
    END IF;
END
$function$;
