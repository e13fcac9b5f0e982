# Which table the registry worker uses (doc/registry.md, "The table"): the
# connection's search_path is read once per connection. The first schema of
# the path that has snowflake_registry is used; if none has it, the table is
# created in current_schema(). Every statement then names the table with its
# schema, so a table of the same name created later in an earlier schema of
# the path does not divert the claims (on the code before issue 13 the next
# renewal went to it). A path with no schema at all is an error the status
# shows. The table the worker creates is the one doc/registry.md shows.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use RegistryTable;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

my ($registry, $conninfo) = SnowflakeTest::start_registry();
$registry->safe_psql('registry', 'CREATE SCHEMA first; CREATE SCHEMA snowflake');

# Polls the registry until $sql returns t, at most 15 s (a lease is 3 s).
sub registry_until
{
	my ($sql) = @_;
	for (1 .. 150)
	{
		return 1 if $registry->safe_psql('registry', $sql) eq 't';
		usleep(100_000);
	}
	return 0;
}

sub count_rows
{
	my ($table) = @_;
	return $registry->safe_psql('registry', "SELECT count(*) FROM $table");
}

my $node = SnowflakeTest::init_node(
	'node',
	datacenter_id => 1,
	worker_id => 6,
	conf => [
		"snowflake.registry = '$conninfo options=-csearch_path=nowhere,snowflake,first'",
		"snowflake.registry_lease = '3s'"
	]);
SnowflakeTest::start_node($node);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::wait_for_registry($node, "state = 'held'");
is(count_rows('snowflake.snowflake_registry'),
	1, 'no table in the path: created in current_schema() (snowflake), the row in it');

# The table the worker created is the one doc/registry.md tells an
# administrator to create (the doc's copy is made in a schema of its own).
$registry->safe_psql('registry',
	'CREATE SCHEMA from_doc; ' . RegistryTable::doc_statement('from_doc.snowflake_registry'));
is( $registry->safe_psql('registry', RegistryTable::shape_query('snowflake.snowflake_registry')),
	$registry->safe_psql('registry', RegistryTable::shape_query('from_doc.snowflake_registry')),
	'the worker creates the table doc/registry.md shows: same columns, types, NOT NULLs, primary key');

# Now a path whose first schema is empty: the table is found in the second.
SnowflakeTest::set_config($node,
	'snowflake.registry' => "$conninfo options=-csearch_path=first,snowflake");
my $renewed = $registry->safe_psql('registry',
	'SELECT renewed_at FROM snowflake.snowflake_registry');
ok(registry_until("SELECT renewed_at > '$renewed' FROM snowflake.snowflake_registry"),
	'renewed after the reload, in the table found in the second schema');

# A table of the same name appears in the earlier schema.
$registry->safe_psql('registry',
	'CREATE TABLE first.snowflake_registry (LIKE snowflake.snowflake_registry INCLUDING ALL)');
$renewed = $registry->safe_psql('registry',
	'SELECT renewed_at FROM snowflake.snowflake_registry');
ok( registry_until(
		"SELECT renewed_at > '$renewed'::timestamptz + interval '1.5 s' FROM snowflake.snowflake_registry"),
	'renewals keep going to the table resolved at connection (two since)');
is(count_rows('first.snowflake_registry'),
	0, 'the table created later in an earlier schema gets no row');
is(SnowflakeTest::registry_status($node, 'state'), 'held', 'the node still holds its lease');

# A path without any schema: nothing to use, nowhere to create.
SnowflakeTest::set_config($node,
	'snowflake.registry' => "$conninfo options=-csearch_path=nowhere");
SnowflakeTest::wait_for_registry($node,
	"last_error LIKE '%no table snowflake_registry in the search_path, and no schema%'",
	'a path with no schema: the status says so');

$node->stop('fast');
done_testing();
