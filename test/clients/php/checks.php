<?php
// What every PHP client test asserts about the IDs it got back, checked on the
// server through a PDO connection of its own (each ID is one the server holds,
// digit for digit, and decodes to this node), and a small runner: each test is
// a function, its failed checks are printed, and the script exits 1 if any
// failed. No test framework: Debian's phpunit differs by four majors between
// bookworm and forky, and these tests need only this.

declare(strict_types=1);

/** A PDO connection to the client's database (libpq's PG* variables). */
function connect(): PDO
{
    return new PDO(
        sprintf('pgsql:host=%s;port=%s;dbname=%s', getenv('PGHOST'), getenv('PGPORT'), getenv('PGDATABASE')),
        getenv('PGUSER'),
        null,
        [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]
    );
}

/** test/clients/schema.sql, the drivers' schema in doc/clients.md. */
function run_schema(PDO $db): void
{
    $db->exec(file_get_contents(__DIR__ . '/../schema.sql'));
}

final class Failed extends Exception
{
}

function check(bool $condition, string $what): void
{
    if (!$condition) {
        throw new Failed($what);
    }
}

function check_same($expected, $actual, string $what): void
{
    check($expected === $actual, sprintf('%s: expected %s, got %s', $what, var_export($expected, true), var_export($actual, true)));
}

/** The IDs among $ids that $table holds, as the server writes them, sorted. */
function ids_held(string $table, array $ids): array
{
    $texts = array_map('strval', $ids);
    $statement = connect()->prepare("SELECT id::text FROM $table WHERE id::text = ANY(?::text[])");
    $statement->execute(['{' . implode(',', $texts) . '}']);
    $held = $statement->fetchAll(PDO::FETCH_COLUMN);
    sort($held, SORT_STRING);
    return $held;
}

/** Each ID an int (or, with $type 'string', the ID's digits), distinct, and held by $table. */
function check_exact(string $table, array $ids, string $type = 'int'): void
{
    check(count($ids) > 0, "no IDs from $table");
    foreach ($ids as $id) {
        check(get_debug_type($id) === $type, var_export($id, true) . " is not a $type");
    }
    check_same(count($ids), count(array_unique(array_map('strval', $ids))), "distinct IDs of $table");
    $texts = array_map('strval', $ids);
    sort($texts, SORT_STRING);
    check_same($texts, ids_held($table, $ids), "the IDs $table holds");
}

/** The ID decodes to this node, issued within five minutes. */
function check_decodes($id): void
{
    $statement = connect()->prepare('SELECT extract(epoch FROM ts) AS seconds, datacenter_id, worker_id FROM snowflake_decode(?)');
    $statement->execute([(string) $id]);
    $row = $statement->fetch(PDO::FETCH_ASSOC);
    check_same([(int) getenv('SNOWFLAKE_DATACENTER_ID'), (int) getenv('SNOWFLAKE_WORKER_ID')],
        [$row['datacenter_id'], $row['worker_id']], "the node $id decodes to");
    check(abs(microtime(true) - (float) $row['seconds']) < 300, "$id decodes to a time five minutes away");
}

/** Runs each test (name => function), printing its outcome; exits 1 if one failed. */
function run_tests(array $tests): void
{
    $failed = 0;
    foreach ($tests as $name => $test) {
        try {
            $test();
            echo "ok - $name\n";
        } catch (Throwable $problem) {
            $failed++;
            echo "not ok - $name\n    " . get_class($problem) . ': ' . $problem->getMessage() . "\n";
            if (!$problem instanceof Failed) {
                echo '    at ' . $problem->getFile() . ':' . $problem->getLine() . "\n";
            }
        }
    }
    printf("%d passed, %d failed\n", count($tests) - $failed, $failed);
    exit($failed === 0 ? 0 : 1);
}
