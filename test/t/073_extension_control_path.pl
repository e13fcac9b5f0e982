# Issue 28: snowflake installed into a directory of its own and loaded from
# there, as Kubernetes operators (CloudNativePG's image volumes) load
# extensions on PostgreSQL 18 and later: extension_control_path finds the
# control file and the SQL scripts under DIR/share/extension,
# dynamic_library_path the library in DIR/lib (doc/install.md, "Into a
# directory of its own").
#
# DIR is what `make install datadir=DIR/share pkglibdir=DIR/lib` wrote
# (scripts/test.sh tap runs it and names DIR in SNOWFLAKE_EXTENSION_DIR); run
# by hand without it, the test copies the installed files into the same
# layout. Two nodes:
# - "preloaded": shared_preload_libraries = 'snowflake', the library found
#   through dynamic_library_path; CREATE EXTENSION, IDs issued and decoded,
#   the status view, and ALTER EXTENSION UPDATE from 1.0 through every update
#   script in DIR;
# - "plain": no preload; CREATE EXTENSION loads the library from DIR, IDs
#   decode, and snowflake_nextval() refuses saying it needs the preload.
# In both, extension_control_path names DIR alone (no $system), so nothing
# can come from PostgreSQL's own directory, and every backend's mapped
# snowflake.so is DIR's (/proc/self/maps).
use strict;
use warnings FATAL => 'all';

use File::Copy;
use File::Path qw(make_path);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my ($major) = `pg_config --version` =~ /PostgreSQL (\d+)/
  or die 'pg_config --version names no PostgreSQL major';
plan skip_all =>
  "extension_control_path is new in PostgreSQL 18, this is $major"
  if $major < 18;

my $prefix = $ENV{SNOWFLAKE_EXTENSION_DIR};
if (!$prefix)
{
	$prefix = PostgreSQL::Test::Utils::tempdir('extension_dir');
	my $sharedir = `pg_config --sharedir`;
	my $pkglibdir = `pg_config --pkglibdir`;
	chomp($sharedir, $pkglibdir);
	make_path("$prefix/share/extension", "$prefix/lib");
	for my $file (glob("$sharedir/extension/snowflake.control"),
		glob("$sharedir/extension/snowflake--*.sql"))
	{
		copy($file, "$prefix/share/extension/") or die "copy $file: $!";
	}
	copy("$pkglibdir/snowflake.so", "$prefix/lib/") or die "copy: $!";
	note "SNOWFLAKE_EXTENSION_DIR unset: copied the installed files to $prefix";
}
my $share = "$prefix/share";
my $lib = "$prefix/lib";
ok(-f "$share/extension/snowflake.control", "$share/extension has the control file");
ok(-f "$share/extension/snowflake--1.0.sql" && -f "$share/extension/snowflake--1.5--1.6.sql",
	"... and the install and update scripts");
ok(-f "$lib/snowflake.so", "$lib has the library");

my @settings = (
	"extension_control_path = '$share'",
	"dynamic_library_path = '$lib:\$libdir'");

# --- with the preload ---------------------------------------------------
my $preloaded = SnowflakeTest::init_node('preloaded', conf => \@settings);
SnowflakeTest::start_node($preloaded);
is(SnowflakeTest::mapped_library($preloaded), "$lib/snowflake.so",
	'preloaded: the server loaded snowflake.so from the directory of its own');
is( $preloaded->safe_psql(
		'postgres',
		"SELECT string_agg(name, ',' ORDER BY name) FROM pg_available_extensions"),
	'snowflake',
	'preloaded: the only extension available is the one in that directory');
$preloaded->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my $default = $preloaded->safe_psql('postgres',
	"SELECT extversion FROM pg_extension WHERE extname = 'snowflake'");
like($default, qr/^\d+\.\d+$/, "preloaded: CREATE EXTENSION made version $default");
my $id = $preloaded->safe_psql('postgres', 'SELECT snowflake_nextval()');
cmp_ok($id, '>', 0, 'preloaded: an ID is issued');
is( $preloaded->safe_psql(
		'postgres', "SELECT datacenter_id || '/' || worker_id FROM snowflake_decode($id)"),
	'3/7', 'preloaded: it decodes to the node\'s identity');
is($preloaded->safe_psql('postgres', 'SELECT ids_issued >= 1 FROM snowflake_status'),
	't', 'preloaded: snowflake_status counts it');
is(SnowflakeTest::mapped_library($preloaded, "SELECT snowflake_nextval(), snowflake_decode($id)"),
	"$lib/snowflake.so",
	'preloaded: a backend that ran the functions has only that snowflake.so');

# ALTER EXTENSION UPDATE finds the update scripts in the same directory.
$preloaded->safe_psql('postgres',
	"DROP EXTENSION snowflake; CREATE EXTENSION snowflake VERSION '1.0'");
$preloaded->safe_psql('postgres', 'ALTER EXTENSION snowflake UPDATE');
is( $preloaded->safe_psql(
		'postgres', "SELECT extversion FROM pg_extension WHERE extname = 'snowflake'"),
	$default,
	"preloaded: 1.0 updates to $default through the scripts in that directory");
my $after = $preloaded->safe_psql('postgres', 'SELECT snowflake_nextval()');
cmp_ok($after, '>', $id, 'preloaded: after the update, IDs go on increasing');
$preloaded->stop;

# --- without the preload -------------------------------------------------
my $plain = SnowflakeTest::init_node('plain',
	conf => [ @settings, "shared_preload_libraries = ''" ]);
SnowflakeTest::start_node($plain);
is(SnowflakeTest::mapped_library($plain), '', 'plain: no backend loads snowflake.so at start');
$plain->safe_psql('postgres', 'CREATE EXTENSION snowflake');
is( $plain->safe_psql(
		'postgres',
		"SELECT datacenter_id || '/' || worker_id FROM snowflake_decode($id)"),
	'3/7', 'plain: CREATE EXTENSION, and an ID decodes');
is(SnowflakeTest::mapped_library($plain, "SELECT snowflake_decode($id)"),
	"$lib/snowflake.so",
	'plain: the functions loaded snowflake.so from the directory of its own');
my $result = SnowflakeTest::try_sql($plain, 'SELECT snowflake_nextval()');
ok(!$result->{ok}, 'plain: snowflake_nextval() refuses without the preload');
is($result->{sqlstate}, '55000', 'plain: SQLSTATE 55000')
  or diag "stderr: $result->{stderr}";
like($result->{hint} // '', qr/shared_preload_libraries = 'snowflake'/,
	'plain: the hint names the setting');
$plain->stop;

done_testing();
