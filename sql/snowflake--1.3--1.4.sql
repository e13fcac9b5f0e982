-- snowflake 1.4.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.4'" to load this file. \quit

-- The bound above a node's earlier IDs, given by an operator when the node
-- cannot know it: its data directory was made by pg_upgrade, or restored or
-- copied without pg_snowflake/ (README, "Upgrading PostgreSQL"). Each only
-- raises the bound. Not for PUBLIC: the first reads a file of the server's.
CREATE FUNCTION snowflake_restore_bound(data_directory text) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'snowflake_restore_bound'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_restore_bound(text) IS
    'Adopts the durable bound in DATA_DIRECTORY/pg_snowflake/state, the data directory this one was upgraded or copied from; returns the time after which IDs are issued';

CREATE FUNCTION snowflake_set_bound(issued_up_to timestamptz) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'snowflake_set_bound'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_set_bound(timestamptz) IS
    'Declares that every ID this node issued before is of ISSUED_UP_TO or earlier; returns the time after which IDs are issued';

REVOKE EXECUTE ON FUNCTION snowflake_restore_bound(text), snowflake_set_bound(timestamptz) FROM PUBLIC;

-- snowflake_convert_column, as 1.2 had it, with four findings mended: a
-- nonexistent relation OID is an error of its own (it used to reach LOCK
-- TABLE as a bare number, a syntax error); the table is locked by its name
-- before its kind is trusted, and checked again under the lock; "already uses
-- snowflake_nextval()" means the default depends on this extension's
-- function (a default of my_snowflake_nextval() matched the old pattern);
-- and a sequence that another column's default also uses is refused with the
-- other column named, instead of DROP SEQUENCE's dependency error after the
-- work was done.
CREATE OR REPLACE FUNCTION snowflake_convert_column(rel regclass, col name) RETURNS void
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    extension_schema name;
    qualified text;
    kind "char";
    column_type regtype;
    is_identity boolean;
    default_oid oid;
    default_expression text;
    sequence_name text;
    other_user text;
    largest bigint;
    first_new_id bigint;
BEGIN
    SELECT format('%I.%I', n.nspname, c.relname), c.relkind INTO qualified, kind
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.oid = rel;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'relation with OID % does not exist', rel::oid
            USING ERRCODE = 'undefined_table',
                  HINT = 'Name the table, as in snowflake_convert_column(''orders'', ''id'').';
    END IF;
    IF kind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '% is not a table', qualified
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'snowflake_convert_column converts a column of a table.';
    END IF;

    -- The lock ALTER TABLE takes, taken first: no row can be written between
    -- reading the largest value and changing the default (and no lock upgrade
    -- can deadlock with another conversion). By name: if the table went away
    -- meanwhile, this fails saying so; and the name must still be this table.
    EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', qualified);
    IF qualified::regclass <> rel THEN
        RAISE EXCEPTION 'relation % changed while snowflake_convert_column waited for its lock', qualified
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run it again.';
    END IF;

    SELECT a.atttypid, a.attidentity <> '', d.oid, pg_get_expr(d.adbin, d.adrelid)
      INTO column_type, is_identity, default_oid, default_expression
      FROM pg_attribute a
      LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE a.attrelid = rel AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation % does not exist', col, qualified
            USING ERRCODE = 'undefined_column',
                  HINT = 'Name an existing bigserial or identity column.';
    END IF;

    IF column_type <> 'bigint'::regtype THEN
        RAISE EXCEPTION 'column "%" of relation % is not bigint', col, qualified
            USING ERRCODE = 'datatype_mismatch',
                  DETAIL = format('Its type is %s; snowflake IDs need bigint.', column_type),
                  HINT = format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint first.', qualified, col);
    END IF;

    SELECT extnamespace::regnamespace::name INTO extension_schema
      FROM pg_extension WHERE extname = 'snowflake';
    IF EXISTS (SELECT 1 FROM pg_depend
                WHERE classid = 'pg_attrdef'::regclass AND objid = default_oid
                  AND refclassid = 'pg_proc'::regclass
                  AND refobjid = format('%I.snowflake_nextval()', extension_schema)::regprocedure) THEN
        RAISE EXCEPTION 'column "%" of relation % already uses snowflake_nextval()', col, qualified
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its default is %s.', default_expression),
                  HINT = 'There is nothing to convert.';
    END IF;

    sequence_name := pg_get_serial_sequence(qualified, col);
    IF NOT is_identity AND (sequence_name IS NULL
            OR default_expression IS DISTINCT FROM
               format('nextval(%L::regclass)', sequence_name::regclass)) THEN
        RAISE EXCEPTION 'column "%" of relation % is not a serial or identity column', col, qualified
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its default is %s.', coalesce(default_expression, 'none')),
                  HINT = format('For any other column, ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %I.snowflake_nextval().',
                                qualified, col, extension_schema);
    END IF;

    -- The sequence goes away with the conversion: no other default may use it.
    IF NOT is_identity THEN
        SELECT format('column %I of %s', a.attname, d.adrelid::regclass) INTO other_user
          FROM pg_depend p
          JOIN pg_attrdef d ON p.classid = 'pg_attrdef'::regclass AND d.oid = p.objid
          JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
         WHERE p.refclassid = 'pg_class'::regclass AND p.refobjid = sequence_name::regclass
           AND d.oid <> default_oid
         ORDER BY 1 LIMIT 1;
        IF other_user IS NOT NULL THEN
            RAISE EXCEPTION 'the sequence of column "%" of relation % is also used by %', col, qualified, other_user
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = format('snowflake_convert_column drops %s, which the default of %s uses too.',
                                      sequence_name, other_user),
                      HINT = 'Give the other column a sequence or default of its own first, or convert it too.';
        END IF;
    END IF;

    -- The rows keep their keys, so every new ID must be above them.
    EXECUTE format('SELECT max(%I) FROM %s', col, qualified) INTO largest;
    EXECUTE format('SELECT %I.snowflake_min_id(clock_timestamp())', extension_schema)
        INTO first_new_id;
    IF largest >= first_new_id THEN
        RAISE EXCEPTION 'column "%" of relation % holds values that new snowflake IDs could repeat', col, qualified
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its largest value is %s; new IDs start at %s.', largest, first_new_id),
                  HINT = 'Renumber those rows first, or keep the column as it is.';
    END IF;

    IF is_identity THEN
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', qualified, col);
    END IF;
    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %I.snowflake_nextval()',
                   qualified, col, extension_schema);
    IF NOT is_identity THEN
        EXECUTE format('DROP SEQUENCE %s', sequence_name);
    END IF;
END
$function$;
