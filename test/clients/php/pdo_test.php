<?php
// Plain PDO (Debian's php-pgsql): the recipe of doc/clients.md, and the
// lastInsertId() trap: an error in a fresh session, and a silently wrong key
// after an insert into a serial table in the same session.

declare(strict_types=1);
require __DIR__ . '/checks.php';

$db = connect();
run_schema($db);
// The trap's other table: a serial key, as an audit table or a trigger's has.
$db->exec('CREATE TABLE audit_log (id serial PRIMARY KEY, entry text NOT NULL)');

run_tests([
    'the recipe: RETURNING id' => function () {
        // guide: begin pdo
        $db = new PDO('pgsql:host=127.0.0.1;port=5432;dbname=' . getenv('PGDATABASE'), 'postgres', null,
            [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);

        $insert = $db->prepare('INSERT INTO customers (name) VALUES (?) RETURNING id');
        $insert->execute(['Ada']);
        $customerId = $insert->fetchColumn(); // an int (64-bit PHP), the snowflake ID
        $db->prepare('INSERT INTO orders (customer_id, item) VALUES (?, ?)')->execute([$customerId, 'book']);

        // Bulk: one statement, every ID back
        $bulkIds = $db->query(
            "INSERT INTO customers (name) VALUES ('Grace'), ('Edsger'), ('Barbara') RETURNING id"
        )->fetchAll(PDO::FETCH_COLUMN);

        $decode = $db->prepare('SELECT * FROM snowflake_decode(?)');
        $decode->execute([$customerId]);
        $decoded = $decode->fetch(PDO::FETCH_ASSOC); // ts, datacenter_id, worker_id, sequence
        // guide: end
        check_exact('customers', [$customerId]);
        check_exact('customers', $bulkIds);
        check_same(3, count($bulkIds), 'bulk IDs');
        check_decodes($customerId);
        check_same((int) getenv('SNOWFLAKE_WORKER_ID'), $decoded['worker_id'], 'the worker decoded');
        $order = $db->query("SELECT customer_id FROM orders WHERE item = 'book'")->fetchColumn();
        check_same($customerId, $order, "the order's customer_id");
    },

    'the recipe: snowflake_lastval() after a plain INSERT' => function () {
        $db = connect();
        $db->exec("INSERT INTO audit_log (entry) VALUES ('before')"); // lastval() is now the serial's
        // guide: begin pdo-lastval
        $db->prepare('INSERT INTO customers (name) VALUES (?)')->execute(['Grace']);
        $customerId = $db->query('SELECT snowflake_lastval()')->fetchColumn(); // this session's last snowflake ID
        // guide: end
        check_exact('customers', [$customerId]);
        $newest = $db->query("SELECT id FROM customers WHERE name = 'Grace' ORDER BY id DESC LIMIT 1")->fetchColumn();
        check_same($newest, $customerId, 'snowflake_lastval() after the insert');
    },

    'the trap: lastInsertId() in a fresh session is an error' => function () {
        $db = connect();
        $db->prepare('INSERT INTO customers (name) VALUES (?)')->execute(['Edsger']);
        try {
            $id = $db->lastInsertId();
            throw new Failed('lastInsertId() returned ' . var_export($id, true) . ' where PostgreSQL has no lastval()');
        } catch (PDOException $error) {
            check_same('55000', $error->getCode(), 'the SQLSTATE of lastInsertId()');
            check(str_contains($error->getMessage(), 'lastval is not yet defined in this session'), $error->getMessage());
        }
    },

    'the trap: lastInsertId() after a serial insert is the wrong key, silently' => function () {
        $db = connect();
        // guide: begin pdo-trap
        $db->exec("INSERT INTO audit_log (entry) VALUES ('order placed')"); // a serial key: 1, 2, ...
        $db->prepare('INSERT INTO customers (name) VALUES (?)')->execute(['Barbara']);
        $customerId = $db->lastInsertId(); // "1" or so: audit_log's key, not the customer's
        // guide: end
        $serial = $db->query('SELECT max(id) FROM audit_log')->fetchColumn();
        check_same((string) $serial, $customerId, 'lastInsertId() is the serial key');
        check_same([], ids_held('customers', [$customerId]), 'customers holding the key lastInsertId() gave');
        // And with a sequence's name it reads that sequence, not the snowflake default.
        check_same((string) $serial, $db->lastInsertId('audit_log_id_seq'), "lastInsertId('audit_log_id_seq')");
    },

    '32-bit PHP: what PDO gives' => function () {
        // Not a 32-bit machine: what this one shows of the rule doc/clients.md states.
        $db = connect();
        $id = $db->query('SELECT snowflake_nextval()')->fetchColumn();
        check_same(8, PHP_INT_SIZE, 'PHP_INT_SIZE on this machine');
        check(is_int($id), 'a bigint column is an int in 64-bit PHP');
        $text = $db->query('SELECT snowflake_nextval()::text')->fetchColumn();
        check(is_string($text) && preg_match('/^[0-9]{19}$/', $text) === 1, "id::text is the ID's 19 digits");
        check((string) (float) $text !== $text, 'a float does not hold the ID: ' . (float) $text);
    },
]);
