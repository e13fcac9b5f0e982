# Public IDs in parallel queries, and the key file checked before it is
# opened (issue 45; src/pg/public_id_keys.cpp states the protocol).
#
# A parallel worker never reads the key file: it uses exactly the keys of its
# leader. So a file made unreadable, deleted or moved without a reload (or
# refused at one) fails no parallel query, with or without public IDs, and
# every row is encoded under the leader's keys; an edited file does not reach
# a worker before a reload; a reload that lands while a parallel statement
# runs leaves all of its rows under one key (its workers start after the
# reload). A FIFO at the path is refused at reload, at start and by ALTER
# SYSTEM without blocking anything (each connection, statement and start
# under a timeout, so a hang fails the test instead of hanging it), as is a
# directory; a symbolic link to a key file is followed. A session at client_min_messages = debug5 does
# not see the key file's path when a reload refuses it.
use strict;
use warnings;

use Fcntl;
use IPC::Run;
use POSIX qw(mkfifo);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(time usleep);

sub random_hex
{
	my ($bytes) = @_;
	return join('', map { sprintf('%02x', int(rand(256))) } 1 .. $bytes);
}
my %keys = (A => random_hex(16), B => random_hex(32), E => random_hex(24));
sub key_line { my ($version) = @_; return "$version $keys{$version}"; }

my $rows = 100000;
my $node = SnowflakeTest::init_node(
	'public_ids_parallel',
	conf => [
		'max_worker_processes = 8', 'max_parallel_workers = 4',
		'max_parallel_workers_per_gather = 2', 'parallel_setup_cost = 0',
		'parallel_tuple_cost = 0', 'min_parallel_table_scan_size = 0',
		'parallel_leader_participation = on',
	]);
my $file = $node->basedir . '/public_id.keys';

sub write_keys
{
	my (@lines) = @_;
	unlink($file);
	open(my $fh, '>', $file) or die "could not write $file: $!";
	print $fh map { "$_\n" } @lines;
	close($fh);
	chmod(0600, $file);
	return;
}

write_keys(key_line('A'), key_line('B'));
$node->append_conf('postgresql.conf', "snowflake.public_id_keys_file = '$file'");
SnowflakeTest::start_node($node);

# force_parallel_mode became debug_parallel_query in 16.
my $force_parallel =
  $node->safe_psql('postgres', 'SHOW server_version_num') >= 160000
  ? 'debug_parallel_query'
  : 'force_parallel_mode';

# expected: each ID with its text under B, made without parallel query.
$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION snowflake;
SET max_parallel_workers_per_gather = 0;
CREATE TABLE expected AS
  SELECT g::bigint * 1000003 AS id, snowflake_to_public(g::bigint * 1000003) AS text_b
    FROM generate_series(1, $rows) g;
ANALYZE expected;
-- Sleeps in the leader, before a Gather starts its workers (an InitPlan).
CREATE FUNCTION pause(seconds float8) RETURNS boolean
    LANGUAGE sql PARALLEL RESTRICTED AS \$\$ SELECT true FROM pg_sleep(seconds) \$\$;
});
my $text_42 = $node->safe_psql('postgres', 'SELECT snowflake_to_public(42)');
like($text_42, qr/^B/, "B encodes: $text_42");

# Counts, over every row of `expected` in one parallel statement, the texts
# equal to B's and those of each version, and decodes B's texts; $where is
# added to the scan's WHERE.
sub check_query
{
	my ($where) = @_;
	$where //= 'true';
	return qq{
SELECT count(*) AS rows,
       count(*) FILTER (WHERE snowflake_to_public(id) = text_b) AS under_b,
       count(*) FILTER (WHERE left(snowflake_to_public(id), 1) = 'E') AS under_e,
       count(*) FILTER (WHERE snowflake_from_public(text_b) = id) AS decoded
  FROM expected WHERE $where};
}

# The statement's plan has a Gather whose workers were launched, and the
# functions run below it (in the workers, and the leader).
my $plan = $node->safe_psql('postgres',
	'EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' . check_query());
like($plan, qr/Workers Launched: [12]/, 'the check runs in parallel workers');
like($plan, qr/Partial Aggregate.*\n\s*Output: PARTIAL .*snowflake_to_public/,
	'snowflake_to_public is called below the Gather');
like($plan, qr/Parallel Seq Scan(.*\n)*\s*Worker 0:  actual rows=[1-9]/,
	'where a worker reads rows');

# Parallel queries in a new session: without public IDs, forced into a worker
# and in a real parallel plan; with them, a forced one and the check.
sub parallel_queries_answer
{
	my ($what) = @_;
	my $r = SnowflakeTest::try_sql(
		$node, qq{
SET $force_parallel = on;
SELECT 1;
SELECT snowflake_to_public(42);
SELECT snowflake_from_public('$text_42');
RESET $force_parallel;
SELECT count(*) FROM expected;
} . check_query() . ';');
	ok($r->{ok}, "$what: parallel queries with and without public IDs answer")
	  or diag $r->{stderr};
	is( $r->{stdout},
		join("\n", 1, $text_42, 42, $rows, "$rows|$rows|0|$rows"),
		"$what: every row under the leader's key B");
	return;
}

parallel_queries_answer('the file as loaded');

## Issue 45, defect 1: a file broken on disk fails no parallel query ------------

chmod(0644, $file);
parallel_queries_answer('the file readable by others, not reloaded');

my $log_offset = -s $node->logfile;
$node->reload;
ok( $node->wait_for_log(
		qr/DETAIL:  The file has group or world access \(mode 0644\)/, $log_offset),
	'the reload refuses it');
parallel_queries_answer('the file refused at the reload');
chmod(0600, $file);

rename($file, "$file.moved") or die "rename: $!";
parallel_queries_answer('the file moved away');
rename("$file.moved", $file) or die "rename: $!";

unlink($file);
parallel_queries_answer('the file deleted');
write_keys(key_line('A'), key_line('B'));

## Defect 2: an edited file reaches no worker before the reload ---------------

write_keys(key_line('A'), key_line('B'), key_line('E'));
parallel_queries_answer('E appended, not reloaded');

## A reload during a parallel statement: all its rows under one key ----------

# The statement's InitPlan sleeps in the leader; its workers start after the
# reload, whose keys the session takes only after the statement.
my $session = SnowflakeTest::start_sql($node,
	check_query('(SELECT pause(4))') . ";\nSELECT snowflake_to_public(42);",
	name => 'during_reload');
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
 WHERE application_name = 'during_reload' AND query LIKE '%pause(4)%' AND state = 'active'}),
	'the statement runs');
$node->reload;
ok( $node->poll_query_until(
		'postgres', q{SELECT left(snowflake_to_public(42), 1) = 'E'}),
	'after the reload, new sessions encode under E');
my $r = SnowflakeTest::finish_sql($session);
ok($r->{ok}, 'the statement during the reload answered') or diag $r->{stderr};
my ($counts, $after) = split /\n/, $r->{stdout};
is($counts, "$rows|$rows|0|$rows",
	'each of its rows under B, the key its leader began with, in the workers too');
like($after, qr/^E/, 'the session encodes under E from its next statement');
my $text_42_e = $node->safe_psql('postgres', 'SELECT snowflake_to_public(42)');
$r = SnowflakeTest::try_sql(
	$node, qq{
SET $force_parallel = on;
SELECT snowflake_to_public(42), snowflake_from_public('$text_42_e'), snowflake_from_public('$text_42');
});
is($r->{stdout}, "$text_42_e|42|42", 'a worker encodes under E and decodes B and E');

## A FIFO, a directory, a symbolic link -----------------------------------------

# Whether a new connection answers within $seconds (a hung postmaster accepts
# none).
sub answers_within
{
	my ($seconds) = @_;
	my ($stdout, $stderr, $timed_out);
	$node->psql(
		'postgres', 'SELECT 1',
		stdout => \$stdout,
		stderr => \$stderr,
		timeout => $seconds,
		timed_out => \$timed_out);
	return !$timed_out && defined $stdout && $stdout eq '1';
}

# Whether the log has $pattern after $offset within $seconds.
sub logged_within
{
	my ($pattern, $offset, $seconds) = @_;
	my $deadline = time + $seconds;
	while (time < $deadline)
	{
		return 1 if slurp_file($node->logfile, $offset) =~ $pattern;
		usleep(100_000);
	}
	return 0;
}

# A process blocked opening the FIFO for reading goes on once a writer opens
# and closes it (an empty file then). Never blocks: without a reader, the
# non-blocking open fails.
sub release_fifo
{
	my ($fifo) = @_;
	if (sysopen(my $fh, $fifo // $file, O_WRONLY | O_NONBLOCK)) { close($fh); }
	return;
}

unlink($file);
mkfifo($file, 0600) or die "mkfifo: $!";
$log_offset = -s $node->logfile;
$node->reload;
ok( logged_within(
		qr/LOG:  invalid value for parameter "snowflake.public_id_keys_file".*\n.*DETAIL:  It is a FIFO, not a regular file\./,
		$log_offset, 20),
	'a FIFO at the path: the reload refuses it');
ok(answers_within(15), 'and the server answers new connections');
release_fifo();
is($node->safe_psql('postgres', 'SELECT snowflake_to_public(42)'),
	$text_42_e, 'the keys before stay');

unlink($file);
mkdir($file) or die "mkdir: $!";
$log_offset = -s $node->logfile;
$node->reload;
ok( logged_within(qr/DETAIL:  It is a directory, not a regular file\./, $log_offset, 20),
	'a directory at the path: refused');
rmdir($file);

write_keys(key_line('E'), key_line('A'));
rename($file, "$file.target") or die "rename: $!";
symlink("$file.target", $file) or die "symlink: $!";
$node->reload;
ok( $node->poll_query_until('postgres', q{SELECT left(snowflake_to_public(42), 1) = 'A'}),
	'a symbolic link to a key file is followed');
unlink($file);
rename("$file.target", $file) or die "rename: $!";

# ALTER SYSTEM checks the file of a new path as the server does, never
# waiting; a fit one is taken at the next reload.
mkfifo("$file.fifo", 0600) or die "mkfifo: $!";
my $alter = eval {
	SnowflakeTest::try_sql($node,
		"ALTER SYSTEM SET snowflake.public_id_keys_file = '$file.fifo'",
		timeout => 15);
};
release_fifo("$file.fifo");
ok($alter && !$alter->{ok} && ($alter->{sqlstate} // '') eq '22023',
	'ALTER SYSTEM naming a FIFO: refused at once')
  or diag $alter ? $alter->{stderr} : $@;
like($alter ? $alter->{detail} // '' : '',
	qr/It is a FIFO, not a regular file\./, 'saying why');
unlink("$file.fifo");
open(my $other, '>', "$file.other") or die "could not write $file.other: $!";
print $other key_line('A'), "\n", key_line('B'), "\n";
close($other);
chmod(0600, "$file.other");
$node->safe_psql('postgres',
	"ALTER SYSTEM SET snowflake.public_id_keys_file = '$file.other'");
$node->reload;
ok( $node->poll_query_until('postgres', q{SELECT left(snowflake_to_public(42), 1) = 'B'}),
	'ALTER SYSTEM naming a key file: its keys after the reload');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET snowflake.public_id_keys_file');
$node->reload;
ok( $node->poll_query_until('postgres', q{SELECT left(snowflake_to_public(42), 1) = 'A'}),
	'reset, the keys of the file in postgresql.conf again');

# At start: refused at once, the server not started.
$node->stop('fast');
unlink($file);
mkfifo($file, 0600) or die "mkfifo: $!";
$log_offset = -s $node->logfile;
my $started;
{
	local $ENV{PGCTLTIMEOUT} = 20;
	$started = $node->start(fail_ok => 1);
}
my $log_at_start = slurp_file($node->logfile, $log_offset);    # before any writer
release_fifo();
ok(!$started, 'a FIFO at the path at start: the server does not start');
# A postmaster that waited for a writer (before issue 45) ends once released.
my $pid_file = $node->data_dir . '/postmaster.pid';
for (1 .. 100) { last if !-e $pid_file; usleep(100_000); }
$node->_update_pid(0) if !-e $pid_file;
like(
	$log_at_start,
	qr/FATAL:  could not load the keys of public IDs from snowflake.public_id_keys_file\n.*DETAIL:  It is a FIFO, not a regular file\./,
	'it says why, without waiting for a writer to the FIFO');
unlink($file);
write_keys(key_line('A'), key_line('B'));
SnowflakeTest::start_node($node);
is($node->safe_psql('postgres', 'SELECT snowflake_to_public(42)'),
	$text_42, 'a key file again: it starts, B encodes');

## A refused reload shows no path to a session at debug5 ------------------------

$node->safe_psql('postgres', 'CREATE ROLE public_id_plain LOGIN');

# Runs a session of public_id_plain at debug5 through a reload that refuses
# the key file named `$path`, and returns what it printed.
sub debug5_session_through_refused_reload
{
	my ($path, $name) = @_;
	my ($stdout, $stderr) = ('', '');
	my $run = IPC::Run::start(
		[
			'psql', '-XAtq', '-U', 'public_id_plain', '-d',
			$node->connstr('postgres') . " application_name=$name", '-c',
			'SET client_min_messages = debug5', '-c', 'SELECT pg_sleep(3)', '-c',
			'SELECT 1', '-c', 'SELECT 2'
		],
		'<', \undef, '>', \$stdout, '2>', \$stderr,
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	$node->poll_query_until('postgres',
		qq{SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = '$name' AND query LIKE '%pg_sleep%'}
	) or die "the session did not start";
	my $offset = -s $node->logfile;
	$node->adjust_conf('postgresql.conf', 'snowflake.public_id_keys_file', "'$path'");
	$node->reload;
	$node->wait_for_log(qr/invalid value for parameter "snowflake.public_id_keys_file"/,
		$offset);
	$run->finish;
	return $stderr;
}

my $secret_path = $node->basedir . '/secret_directory_name/public_id.keys';
my $seen = debug5_session_through_refused_reload($secret_path, 'debug5_other_path');
like($seen, qr/DEBUG:  invalid value for parameter "snowflake.public_id_keys_file"/,
	'a session at debug5 sees that the reload refused the setting');
unlike($seen, qr/secret_directory_name/, 'but not the new path');
unlike($seen, qr/\Q$file\E/, 'nor the path in use');

chmod(0644, $file);
$seen = debug5_session_through_refused_reload($file, 'debug5_same_path');
unlike($seen, qr/public_id\.keys/, 'a file refused at its path: the session sees no path');
like($seen, qr/^DEBUG/m, 'while it printed its debug messages');
chmod(0600, $file);

done_testing();
