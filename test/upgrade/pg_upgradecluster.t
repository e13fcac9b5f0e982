# Debian's pg_upgradecluster with the package's hook (debian/pg_upgradecluster-hook,
# README, "Upgrading PostgreSQL"), across two majors: clusters made the Debian
# way (pg_createcluster), upgraded from SNOWFLAKE_UPGRADE_OLD into PG_MAJOR by
# both methods, with the hook installed where the package installs it
# (/etc/postgresql-common/pg_upgradecluster.d/snowflake-NN, debian/rules).
# Run as root by scripts/test.sh upgrade, which installs both majors and
# snowflake for each.
#
# 1. Clusters that do not use snowflake are upgraded as without the hook,
#    which says nothing: one that neither preloads it nor has the extension
#    (dump method), one that preloads it but has the extension in no
#    database and so no state file (pg_upgrade).
# 2. A cluster whose IDs run 20 hours ahead of the clock (max_lead 1d and
#    snowflake_set_bound), with the extension at the default version in
#    "shop" and at 1.3 in "legacy":
#    - without the hook, the dump method keeps the bound all the same: the
#      dump carries it in shop's snowflake_dump_bound (1.8), whose restore
#      raises the new cluster's bound, so its first ID, in shop and in
#      legacy (at 1.3, no such table), lies above the old cluster's last;
#    - with it, the dump method and pg_upgrade both give a new cluster whose
#      first ID, in every database and whatever the extension's version
#      (1.3 after pg_upgrade, no ALTER EXTENSION), is above every ID the old
#      cluster issued, and stays so for thousands of rows; with max_lead
#      lowered to 0 it gives the clock error rather than an ID;
#    - with --rename, which hides the old cluster from hooks, the dump method
#      is stopped before any data is copied, saying why and what to do;
#      pg_upgrade goes on, the hook says what to run, and the new cluster
#      refuses until it is run.
use strict;
use warnings;

use File::Basename qw(dirname);
use File::Spec;
use lib dirname(__FILE__) . '/../perl';
use PsqlError;
use Test::More;

# The clusters' owner runs psql, pg_upgradecluster's hooks and pg_wrapper, all
# Perl: a PERL5LIB naming a directory that user cannot read (prove -I in
# /root) would stop them.
delete $ENV{PERL5LIB};

my $old = $ENV{SNOWFLAKE_UPGRADE_OLD} or plan skip_all => 'SNOWFLAKE_UPGRADE_OLD is not set';
my $new = $ENV{PG_MAJOR} or plan skip_all => 'PG_MAJOR is not set';
plan skip_all => 'runs as root' if $> != 0;

my $HOOK_DIRECTORY = '/etc/postgresql-common/pg_upgradecluster.d';
my $HOOK = "$HOOK_DIRECTORY/snowflake-$new";    # as debian/rules installs it
my $SOURCE = File::Spec->rel2abs(dirname(__FILE__) . '/../../debian/pg_upgradecluster-hook');

my @clusters;    # [version, name] of every cluster made here, dropped at the end

# Newer postgresql-common (forky's) refuses to upgrade while a postgresql-OLD-*
# package lacks its postgresql-NEW-* counterpart; the test layers install
# pgTAP and pg_partman for this release's major only, and no cluster here
# uses them.
my @force_packages =
  system(q{grep -q -- '--force-packages' /usr/bin/pg_upgradecluster}) == 0 ? ('--force-packages') : ();
my $hook_was_there = -e $HOOK;

sub run_command
{
	my (@command) = @_;
	my $output = qx{cd /tmp && @{[ join ' ', map { "'$_'" } @command ]} 2>&1};
	return ($? >> 8, $output);
}

# psql as postgres on cluster `$version/$name`, database `$dbname`; returns
# a result as SnowflakeTest::try_sql does (stdout, stderr, sqlstate, ...).
sub psql
{
	my ($version, $name, $dbname, $sql) = @_;
	my $file = "/tmp/snowflake-upgradecluster-$$.sql";
	open my $fh, '>', $file or die "$file: $!";
	print $fh "\\set VERBOSITY verbose\n$sql\n";
	close $fh;
	chmod 0644, $file;
	my $out = "/tmp/snowflake-upgradecluster-$$.err";
	my $stdout = qx{cd /tmp && runuser -u postgres -- /usr/bin/psql --cluster $version/$name -XAtq -v ON_ERROR_STOP=1 -d $dbname -f $file 2>$out};
	my %result = (ok => $? == 0);
	$result{stderr} = do { local (@ARGV, $/) = $out; <> } // '';
	unlink $file, $out;
	chomp($result{stdout} = $stdout);
	PsqlError::parse(\%result);
	return \%result;
}

sub safe_psql
{
	my $r = psql(@_);
	die "psql on $_[0]/$_[1] ($_[2]) failed: $r->{stderr}\nSQL: $_[3]\n" unless $r->{ok};
	return $r->{stdout};
}

sub create_cluster
{
	my ($name, @settings) = @_;
	my ($status, $output) = run_command('pg_createcluster', $old, $name, '-o', 'listen_addresses=',
		map { ('-o', $_) } @settings);
	die "pg_createcluster $old $name: $output" if $status;
	push @clusters, [ $old, $name ];
	($status, $output) = run_command('pg_ctlcluster', $old, $name, 'start');
	die "pg_ctlcluster $old $name start: $output" if $status;
	return;
}

# pg_upgradecluster into $new; returns its exit status and output.
sub upgrade
{
	my ($name, @options) = @_;
	my $start = time;
	my $new_name = $name;
	for my $i (0 .. $#options - 1) { $new_name = $options[ $i + 1 ] if $options[$i] eq '--rename'; }
	push @clusters, [ $new, $new_name ];
	my ($status, $output) =
	  run_command('timeout', '600', 'pg_upgradecluster', '-v', $new, @force_packages, @options, $old, $name);
	note "pg_upgradecluster @options $old $name: exit $status in " . (time - $start) . " s\n$output";
	return ($status, $output);
}

sub drop_cluster
{
	my ($version, $name) = @_;
	run_command('pg_dropcluster', '--stop', $version, $name);
	return;
}

sub install_hook
{
	my ($status, $output) = run_command('install', '-D', '-m', '755', $SOURCE, $HOOK);
	die "install $HOOK: $output" if $status;
	return;
}

END
{
	my $exit = $?;
	drop_cluster(@$_) for reverse @clusters;
	unlink $HOOK if !$hook_was_there;
	$? = $exit;
}

install_hook();
ok(-x $HOOK, "the hook is installed as $HOOK");
my ($status, $listed) = run_command('run-parts', '--test', '--lsbsysinit', $HOOK_DIRECTORY);
like($listed, qr{^\Q$HOOK\E$}m, 'run-parts, as pg_upgradecluster calls it, runs it');

## 1. Clusters that do not use snowflake -------------------------------------------

create_cluster('sf_plain');
safe_psql($old, 'sf_plain', 'postgres', 'CREATE TABLE t AS SELECT g FROM generate_series(1, 100) g');
my $output;
($status, $output) = upgrade('sf_plain');
is($status, 0, 'a cluster without snowflake: the dump method succeeds with the hook installed')
  or diag $output;
unlike($output, qr/snowflake/, 'and the hook says nothing');
is(safe_psql($new, 'sf_plain', 'postgres', 'SELECT count(*) FROM t'), 100, 'the data arrived');

create_cluster('sf_idle', "shared_preload_libraries=snowflake", 'snowflake.datacenter_id=1',
	'snowflake.worker_id=1');
($status, $output) = upgrade('sf_idle', '--method=upgrade');
is($status, 0, 'a cluster that preloads snowflake but never created it: pg_upgrade succeeds')
  or diag $output;
unlike($output, qr/snowflake:/, 'and the hook says nothing');
is(safe_psql($new, 'sf_idle', 'postgres', 'SELECT 1'), 1, 'the new cluster runs');

## 2. A cluster whose IDs run 20 hours ahead ----------------------------------------

create_cluster('sf_ids', "shared_preload_libraries=snowflake", 'snowflake.datacenter_id=2',
	'snowflake.worker_id=9', "snowflake.max_lead=1d");
safe_psql($old, 'sf_ids', 'postgres', 'CREATE DATABASE shop');
safe_psql($old, 'sf_ids', 'postgres', 'CREATE DATABASE legacy');
safe_psql($old, 'sf_ids', 'shop', <<'SQL');
CREATE EXTENSION snowflake;
SELECT snowflake_set_bound(now() + interval '20 hours');
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item int NOT NULL);
INSERT INTO orders (item) SELECT g FROM generate_series(1, 20000) g;
SQL
safe_psql($old, 'sf_ids', 'legacy', <<'SQL');
CREATE EXTENSION snowflake VERSION '1.3';
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item int NOT NULL);
INSERT INTO events (item) SELECT g FROM generate_series(1, 5000) g;
SQL
safe_psql($old, 'sf_ids', 'shop', 'SELECT count(snowflake_nextval()) FROM generate_series(1, 1000)');
my $highest = safe_psql($old, 'sf_ids', 'shop', 'SELECT snowflake_nextval()');
is( safe_psql($old, 'sf_ids', 'shop',
		"SELECT round(extract(epoch FROM snowflake_timestamp($highest) - now()) / 3600)"),
	20, 'old cluster: its last ID runs 20 hours ahead of the clock');

# New rows in `$table` of `$dbname` on the new cluster: none at or below an old ID.
sub new_rows_above_ok
{
	my ($label, $dbname, $table, $old_rows) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	safe_psql($new, 'sf_ids', $dbname,
		"INSERT INTO $table (item) SELECT 1000000 + g FROM generate_series(1, 10000) g");
	is( safe_psql(
			$new, 'sf_ids', $dbname,
			"SELECT count(*), count(*) FILTER (WHERE item > 1000000 AND id <= $highest) FROM $table"),
		($old_rows + 10000) . '|0',
		"$label, $table: 10,000 new rows, none at or below an old ID");
	return;
}

# Without the hook, the dump method: the dump carries the bound (1.8's
# snowflake_dump_bound in shop; before 1.8, the hole the hook closes).
unlink $HOOK;
($status, $output) = upgrade('sf_ids');
is($status, 0, 'without the hook: the dump method succeeds') or diag $output;
for my $dbname ('shop', 'legacy')
{
	is(safe_psql($new, 'sf_ids', $dbname, "SELECT snowflake_nextval() > $highest"),
		't', "without the hook: the dump carries the bound, and the new cluster's first ID in $dbname is above the old cluster's last");
}
drop_cluster($new, 'sf_ids');
install_hook();

# With the hook, the dump method.
($status, $output) = upgrade('sf_ids');
is($status, 0, 'with the hook: the dump method succeeds') or diag $output;
like($output, qr{snowflake: the new cluster $new/sf_ids issues its snowflake IDs after .*\n.*above every ID the old cluster issued},
	'the hook says it gave the new cluster the old bound');
is(safe_psql($new, 'sf_ids', 'shop', "SELECT snowflake_nextval() > $highest"),
	't', 'dump: the new cluster\'s first ID is above every ID the old cluster issued');
is(safe_psql($new, 'sf_ids', 'legacy', "SELECT snowflake_nextval() > $highest"),
	't', 'dump: in "legacy" too');
new_rows_above_ok('dump', 'shop', 'orders', 20000);
new_rows_above_ok('dump', 'legacy', 'events', 5000);
safe_psql($new, 'sf_ids', 'postgres', 'ALTER SYSTEM SET snowflake.max_lead = 0; SELECT pg_reload_conf()');
my $r;
for (1 .. 50)
{
	$r = psql($new, 'sf_ids', 'shop', 'SELECT snowflake_nextval()');
	last if !$r->{ok};
	select(undef, undef, undef, 0.1);
}
is($r->{sqlstate}, '55000', 'dump, max_lead lowered to 0: the clock 20 hours behind is an error (55000)')
  or diag $r->{stderr};
like($r->{message} // '', qr/^system clock moved backwards by \d+ ms$/,
	'dump, max_lead 0: the clock error, not an ID under the old cluster\'s');
drop_cluster($new, 'sf_ids');

# With the hook, pg_upgrade: the extension in "legacy" stays at 1.3.
($status, $output) = upgrade('sf_ids', '--method=upgrade');
is($status, 0, 'with the hook: pg_upgrade succeeds') or diag $output;
like($output, qr{snowflake: copied \S+/pg_snowflake/state to \S+/pg_snowflake/given: the new cluster $new/sf_ids},
	'the hook says it copied the old state file');
is(safe_psql($new, 'sf_ids', 'legacy', "SELECT extversion FROM pg_extension WHERE extname = 'snowflake'"),
	'1.3', 'pg_upgrade: "legacy" keeps the extension at 1.3');
$r = psql($new, 'sf_ids', 'legacy', "SELECT snowflake_nextval() > $highest");
is($r->{stdout}, 't',
	'pg_upgrade: with no ALTER EXTENSION, the first ID, in "legacy" at 1.3, is above every ID the old cluster issued')
  or diag $r->{stderr};
new_rows_above_ok('pg_upgrade', 'legacy', 'events', 5000);
new_rows_above_ok('pg_upgrade', 'shop', 'orders', 20000);
drop_cluster($new, 'sf_ids');

# --rename hides the old cluster: the dump method is stopped.
($status, $output) = upgrade('sf_ids', '--rename', 'sf_renamed');
isnt($status, 0, '--rename, dump method: the upgrade is stopped');
like($output, qr/snowflake: there is no cluster $old\/sf_renamed: pg_upgradecluster --rename/,
	'--rename: the hook says why');
like($output, qr/Upgrade without --rename and rename afterwards \(pg_renamecluster\), or use --method=upgrade/,
	'--rename: and what to do');
($status) = run_command('pg_lsclusters', $new, 'sf_renamed');
isnt($status, 0, '--rename: no new cluster is left');

# --rename with pg_upgrade: the hook says so, and the new cluster refuses
# until the HINT's command.
(undef, $listed) = run_command('pg_lsclusters', '-h', $old, 'sf_ids');
like($listed, qr/^\S+ sf_ids \d+ online /, '--rename: pg_upgradecluster leaves the old cluster running');
run_command('pg_ctlcluster', $old, 'sf_ids', 'stop');
($status, $output) = upgrade('sf_ids', '--method=upgrade', '--rename', 'sf_renamed');
is($status, 0, '--rename, pg_upgrade: the upgrade goes on') or diag $output;
like($output, qr/After the upgrade the new cluster refuses to issue IDs until a superuser runs\n.*SELECT snowflake_restore_bound/,
	'--rename, pg_upgrade: the hook says what to run');
$r = psql($new, 'sf_renamed', 'shop', 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '55000', '--rename, pg_upgrade: the new cluster refuses (55000)') or diag $r->{stderr};
like($r->{message} // '', qr/the bound above this node's earlier snowflake IDs is unknown/,
	'--rename, pg_upgrade: because the bound is unknown');
my $old_data = "/var/lib/postgresql/$old/sf_ids";
is(safe_psql($new, 'sf_renamed', 'shop', "SELECT snowflake_restore_bound('$old_data') IS NOT NULL; SELECT snowflake_nextval() > $highest"),
	"t\nt", '--rename, pg_upgrade: after snowflake_restore_bound it issues above every old ID');

done_testing();
