-- pg_temp.error_of(statement): the SQLSTATE, message and hint of the error
-- the statement raises (NULLs if none), for what pgTAP's throws_ok cannot
-- check, such as the text of a HINT. The suites include it with \ir.
CREATE FUNCTION pg_temp.error_of(statement text, OUT code text, OUT message text, OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE statement;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
END
$$;
