-- snowflake 1.7.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.7'" to load this file. \quit
