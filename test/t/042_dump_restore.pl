# A database that issues its keys with snowflake survives pg_dump and a
# restore into another cluster (preloaded, another worker_id) unchanged: the
# extension, the column and domain defaults, a view and an expression index on
# snowflake_decode, and the data. Both dump formats: plain SQL replayed by
# psql, and custom format replayed by pg_restore. Then the restored node
# issues IDs of its own that collide with no restored row. The same again for
# a database whose extension lives in a schema of its own (ids).
use strict;
use warnings;

use File::Spec;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

# A started node that preloads snowflake with the identity (datacenter_id,
# worker_id).
sub snowflake_node
{
	my ($name, $datacenter_id, $worker_id) = @_;
	my $node = SnowflakeTest::init_node(
		$name,
		datacenter_id => $datacenter_id,
		worker_id => $worker_id);
	SnowflakeTest::start_node($node);
	return $node;
}

my $source = snowflake_node('source', 2, 5);
my $restored = snowflake_node('restored', 2, 6);
my $dumps = PostgreSQL::Test::Utils::tempdir;

# The extension in public: primary-key defaults, a snowflake column that is
# not the key, a domain whose default issues IDs, a foreign key, a view and
# an expression index on snowflake_decode.
$source->safe_psql('postgres', 'CREATE DATABASE shop');
$source->safe_psql('shop', <<'EOS');
CREATE EXTENSION snowflake;
CREATE DOMAIN snowflake_id AS bigint DEFAULT snowflake_nextval();
CREATE TABLE customers (
    id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    name text NOT NULL);
CREATE TABLE orders (
    id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    customer_id bigint NOT NULL REFERENCES customers,
    total_cents integer NOT NULL);
CREATE INDEX orders_issued_at ON orders (((snowflake_decode(id)).ts));
CREATE TABLE audit_log (
    entry text NOT NULL,
    logged_id bigint NOT NULL UNIQUE DEFAULT snowflake_nextval());
CREATE TABLE tickets (
    id snowflake_id PRIMARY KEY,
    subject text NOT NULL);
CREATE VIEW order_times AS
    SELECT o.id, o.customer_id, d.ts, d.datacenter_id, d.worker_id, d.sequence
    FROM orders o CROSS JOIN LATERAL snowflake_decode(o.id) d;

INSERT INTO customers (name) SELECT 'customer ' || i FROM generate_series(1, 1000) i;
INSERT INTO orders (customer_id, total_cents)
    SELECT c.id, (c.id % 9973)::integer + i
    FROM customers c CROSS JOIN generate_series(1, 5) i;
INSERT INTO audit_log (entry) SELECT 'event ' || i FROM generate_series(1, 2000) i;
INSERT INTO tickets (subject) SELECT 'ticket ' || i FROM generate_series(1, 500) i;
EOS

# The extension in a schema of its own, referred to by qualified names.
$source->safe_psql('postgres', 'CREATE DATABASE shop_ids');
$source->safe_psql('shop_ids', <<'EOS');
CREATE SCHEMA ids;
CREATE EXTENSION snowflake SCHEMA ids;
CREATE TABLE accounts (
    id bigint PRIMARY KEY DEFAULT ids.snowflake_nextval(),
    email text NOT NULL);
CREATE VIEW account_times AS
    SELECT a.id, (ids.snowflake_decode(a.id)).ts FROM accounts a;
INSERT INTO accounts (email) SELECT 'user' || i || '@example.com' FROM generate_series(1, 3000) i;
EOS

# The tables of each database with their key (for a deterministic order), and
# the columns that hold snowflake IDs.
my %tables = (
	shop => {
		customers => 'id',
		orders => 'id',
		audit_log => 'logged_id',
		tickets => 'id',
		order_times => 'id',
	},
	shop_ids => { accounts => 'id', account_times => 'id' },);

# What must come back unchanged, as name => text, for database $db holding
# the tables of $kind (shop or shop_ids).
sub fingerprint
{
	my ($node, $db, $kind) = @_;
	my %print;
	$print{extension} = $node->safe_psql($db, <<'EOS');
SELECT e.extname || ' ' || e.extversion || ' in schema ' || n.nspname
FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
WHERE e.extname = 'snowflake'
EOS
	$print{'column defaults'} = $node->safe_psql($db, <<'EOS');
SELECT string_agg(format('%s.%s = %s', c.relname, a.attname, pg_get_expr(d.adbin, d.adrelid)),
                  E'\n' ORDER BY c.relname, a.attname)
FROM pg_attrdef d
JOIN pg_class c ON c.oid = d.adrelid
JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
EOS
	$print{'domain defaults'} = $node->safe_psql($db, <<'EOS');
SELECT string_agg(format('%s = %s', t.typname, pg_get_expr(t.typdefaultbin, 0)), E'\n' ORDER BY t.typname)
FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE t.typtype = 'd' AND n.nspname NOT IN ('pg_catalog', 'information_schema')
EOS
	# The defaults call the extension's function (a dependency on it), not a
	# same-named function elsewhere.
	$print{'objects depending on snowflake_nextval'} = $node->safe_psql($db, <<'EOS');
SELECT string_agg(o.description, E'\n' ORDER BY o.description COLLATE "C")
FROM pg_depend d
CROSS JOIN LATERAL pg_describe_object(d.classid, d.objid, d.objsubid) o(description)
JOIN pg_proc p ON d.refclassid = 'pg_proc'::regclass AND d.refobjid = p.oid
JOIN pg_depend x ON x.classid = 'pg_proc'::regclass AND x.objid = p.oid AND x.deptype = 'e'
JOIN pg_extension e ON x.refclassid = 'pg_extension'::regclass AND x.refobjid = e.oid
WHERE e.extname = 'snowflake' AND p.proname = 'snowflake_nextval' AND d.deptype = 'n'
EOS
	$print{'views and indexes'} = $node->safe_psql($db, <<'EOS');
SELECT string_agg(def, E'\n' ORDER BY def) FROM (
    SELECT c.relname || ': ' || pg_get_viewdef(c.oid) AS def
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind = 'v' AND n.nspname = 'public'
    UNION ALL
    SELECT indexdef FROM pg_indexes WHERE schemaname = 'public') defs
EOS
	my $relations = $tables{$kind};
	for my $relation (sort keys %$relations)
	{
		my $key = $relations->{$relation};
		$print{"rows of $relation"} = $node->safe_psql($db,
			"SELECT count(*) || ' rows, md5 ' || md5(string_agg(r::text, ',' ORDER BY r.$key)) FROM $relation r"
		);
	}
	return \%print;
}

my %before = map { $_ => fingerprint($source, $_, $_) } keys %tables;

like($before{shop}{extension}, qr/^snowflake \S+ in schema public$/,
	'shop: the extension is in public');
like($before{shop_ids}{extension}, qr/^snowflake \S+ in schema ids$/,
	'shop_ids: the extension is in schema ids');
like($before{shop_ids}{'column defaults'}, qr/^accounts\.id = ids\.snowflake_nextval\(\)$/,
	'shop_ids: the default names the ids schema');
note "defaults of shop:\n$before{shop}{'column defaults'}\n$before{shop}{'domain defaults'}";

# Inserts a few rows with their defaults into every table of $db on the
# restored node, then checks that every snowflake column is still unique,
# that the new IDs carry the restored node's identity and that they come
# after every restored ID.
sub check_new_ids
{
	my ($node, $db, $label) = @_;
	my %new_rows = (
		shop => <<'EOS',
CREATE TEMP TABLE restored_max AS SELECT max(id) AS id FROM (
    SELECT id FROM customers UNION ALL SELECT id FROM orders
    UNION ALL SELECT logged_id FROM audit_log UNION ALL SELECT id FROM tickets) ids;
INSERT INTO customers (name) SELECT 'new customer ' || i FROM generate_series(1, 200) i;
INSERT INTO orders (customer_id, total_cents)
    SELECT id, 1 FROM customers ORDER BY id LIMIT 300;
INSERT INTO audit_log (entry) SELECT 'new event ' || i FROM generate_series(1, 200) i;
INSERT INTO tickets (subject) SELECT 'new ticket ' || i FROM generate_series(1, 200) i;
SELECT string_agg(format('%s: %s rows, %s distinct, %s new, %s new of this node, %s new after the restored ones',
                         t, n, d, new, mine, later), E'\n' ORDER BY t)
FROM (
    SELECT t, count(*) AS n, count(DISTINCT id) AS d,
           count(*) FILTER (WHERE (snowflake_decode(id)).worker_id = 6) AS new,
           count(*) FILTER (WHERE (snowflake_decode(id)).worker_id = 6
                              AND (snowflake_decode(id)).datacenter_id = 2) AS mine,
           count(*) FILTER (WHERE id > (SELECT id FROM restored_max)) AS later
    FROM (SELECT 'customers' AS t, id FROM customers
          UNION ALL SELECT 'orders', id FROM orders
          UNION ALL SELECT 'audit_log', logged_id FROM audit_log
          UNION ALL SELECT 'tickets', id FROM tickets) ids
    GROUP BY t) counts
EOS
		shop_ids => <<'EOS',
CREATE TEMP TABLE restored_max AS SELECT max(id) AS id FROM accounts;
INSERT INTO accounts (email) SELECT 'new' || i || '@example.com' FROM generate_series(1, 200) i;
SELECT format('accounts: %s rows, %s distinct, %s new, %s new of this node, %s new after the restored ones',
              count(*), count(DISTINCT id),
              count(*) FILTER (WHERE (ids.snowflake_decode(id)).worker_id = 6),
              count(*) FILTER (WHERE (ids.snowflake_decode(id)).worker_id = 6
                                 AND (ids.snowflake_decode(id)).datacenter_id = 2),
              count(*) FILTER (WHERE id > (SELECT id FROM restored_max)))
FROM accounts
EOS
	);
	my %expected = (
		shop => join("\n",
			'audit_log: 2200 rows, 2200 distinct, 200 new, 200 new of this node, 200 new after the restored ones',
			'customers: 1200 rows, 1200 distinct, 200 new, 200 new of this node, 200 new after the restored ones',
			'orders: 5300 rows, 5300 distinct, 300 new, 300 new of this node, 300 new after the restored ones',
			'tickets: 700 rows, 700 distinct, 200 new, 200 new of this node, 200 new after the restored ones'),
		shop_ids =>
		  'accounts: 3200 rows, 3200 distinct, 200 new, 200 new of this node, 200 new after the restored ones',
	);
	is($node->safe_psql($label, $new_rows{$db}),
		$expected{$db}, "$label: new IDs are the restored node's and collide with no restored row");
}

for my $db (sort keys %tables)
{
	my $plain = File::Spec->catfile($dumps, "$db.sql");
	my $custom = File::Spec->catfile($dumps, "$db.dump");
	$source->command_ok([ 'pg_dump', '--format=plain', '--file', $plain, '--dbname', $db ],
		"$db: pg_dump, plain SQL");
	$source->command_ok([ 'pg_dump', '--format=custom', '--file', $custom, '--dbname', $db ],
		"$db: pg_dump, custom format");

	my $from_plain = "${db}_from_plain";
	my $from_custom = "${db}_from_custom";
	$restored->safe_psql('postgres', "CREATE DATABASE $from_plain");
	$restored->safe_psql('postgres', "CREATE DATABASE $from_custom");
	$restored->command_ok(
		[
			'psql', '--no-psqlrc', '--quiet', '--set', 'ON_ERROR_STOP=1',
			'--single-transaction', '--file', $plain, '--dbname', $from_plain
		],
		"$db: the plain dump replays through psql without an error");
	$restored->command_ok(
		[
			'pg_restore', '--exit-on-error', '--single-transaction',
			'--dbname', $from_custom, $custom
		],
		"$db: the custom dump restores through pg_restore without an error");

	for my $copy ($from_plain, $from_custom)
	{
		my $after = fingerprint($restored, $copy, $db);
		for my $item (sort keys %{ $before{$db} })
		{
			is($after->{$item}, $before{$db}{$item}, "$copy: $item unchanged");
		}
		check_new_ids($restored, $db, $copy);
	}
}

# Nothing of the extension leaked into public where it lives in ids.
is( $restored->safe_psql(
		'shop_ids_from_custom',
		"SELECT to_regprocedure('public.snowflake_nextval()') IS NULL
		    AND to_regprocedure('ids.snowflake_nextval()') IS NOT NULL"),
	't',
	'shop_ids: after restore the functions are in ids, not in public');

done_testing();
