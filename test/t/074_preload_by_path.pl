# The library preloaded by path: shared_preload_libraries names a snowflake.so
# in a directory that dynamic_library_path does not search, while $libdir
# holds another file of the same name (another build: an A/B benchmark,
# test/bench/run.sh's item 6, or a hand-made install), and the functions are
# created by path. The background workers (the registry worker, which runs
# the bound check of a new data directory) must load the file the postmaster
# loaded: "snowflake" through dynamic_library_path would be $libdir's, whose
# _PG_init defines the settings a second time ("attempt to redefine
# parameter"), so that the worker never ran and the first ID waited for ever.
use strict;
use warnings FATAL => 'all';

use File::Copy;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
my $dir = PostgreSQL::Test::Utils::tempdir('library');
copy("$pkglibdir/snowflake.so", "$dir/snowflake.so") or die "copy: $!";
chmod 0755, $dir, "$dir/snowflake.so";

my $node = SnowflakeTest::init_node('by_path',
	conf => [ "shared_preload_libraries = '$dir/snowflake.so'" ]);
SnowflakeTest::start_node($node);
$node->safe_psql('postgres',
	"CREATE FUNCTION snowflake_nextval() RETURNS bigint
	 AS '$dir/snowflake.so', 'snowflake_nextval' LANGUAGE C VOLATILE");

# A new data directory issues once the registry worker's check has found no
# database with the extension: seconds.
my $first;
for (1 .. 30)
{
	my ($ret, $stdout) = $node->psql('postgres', 'SELECT snowflake_nextval()');
	if ($ret == 0) { $first = $stdout; last; }
	sleep 1;
}
like($first // '', qr/^\d{18,19}$/, 'a new data directory issues its first ID');

my $worker = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake registry'");
like($worker, qr/^\d+$/, 'the registry worker runs');
is(SnowflakeTest::mapped_library($node, undef, $worker),
	"$dir/snowflake.so", "... from the file the postmaster loaded, ${dir}'s");
is(SnowflakeTest::mapped_library($node, 'SELECT snowflake_nextval()'),
	"$dir/snowflake.so", 'a backend that issued maps that file only');
unlike(slurp_file($node->logfile), qr/attempt to redefine parameter/,
	'no library loaded a second time');

$node->stop;
done_testing();
