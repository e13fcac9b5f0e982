# SQL sessions of a test: psql run to the end or in the background, its
# error read (SQLSTATE, message, DETAIL, HINT: PsqlError), retried, and
# settings changed with a wait for the reload.
package SnowflakeTest::Sql;

use strict;
use warnings FATAL => 'all';

use Carp;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(time usleep);
use PsqlError;

=pod

=head1 NAME

SnowflakeTest::Sql - SQL sessions of snowflake's cluster tests

=head1 FUNCTIONS

=over

=item try_sql($node, $sql, %options) => $result

Runs C<$sql> (psql script, stops at the first error) and returns a hash:

  ok        1 if psql exited 0
  stdout    psql's output (unaligned, tuples only), chomped
  stderr    psql's messages (errors in verbose form, with SQLSTATE)
  sqlstate  the first error's SQLSTATE, or undef if there was no error
  message   the first error's message
  detail    its DETAIL line, if any
  hint      its HINT line, if any
  elapsed   seconds from start to the end of psql

Options: C<name> sets application_name (default snowflake_test),
C<dbname> (default postgres), C<timeout> in seconds (default the
framework's).

=item start_sql($node, $sql, %options) => $handle / finish_sql($handle) => $result

The same in two halves: start_sql starts psql in the background and returns
at once; finish_sql waits for it to end and returns the result. Use a
distinct C<name> to find the session's backend with backend_pid.

=item running($handle) => bool

Whether the session started by start_sql is still running.

=item backend_pid($node, $name) => $pid

Waits until a session with application_name C<$name> is connected and
returns its backend's pid.

=cut

my $session_dir;    # scripts and outputs of start_sql sessions
my $session_count = 0;

sub start_sql
{
	my ($node, $sql, %options) = @_;
	my $name = $options{name} // 'snowflake_test';
	my $connstr = $node->connstr($options{dbname} // 'postgres')
	  . " application_name=$name";
	# Files, not pipes: the session runs on its own, however much it prints,
	# without this process pumping its input and output.
	$session_dir //= PostgreSQL::Test::Utils::tempdir('sessions');
	my $file = sprintf('%s/%03d_%s', $session_dir, ++$session_count, $name);
	append_to_file("$file.sql", "\\set VERBOSITY verbose\n$sql\n");
	my $handle = {
		name => $name,
		file => $file,
		started => time,
	};
	$handle->{timer} = IPC::Run::timeout($options{timeout}
		  // $PostgreSQL::Test::Utils::timeout_default);
	$handle->{run} = IPC::Run::start(
		[
			'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $connstr,
			'-f', "$file.sql"
		],
		'<', '/dev/null',
		'>', "$file.out",
		'2>', "$file.err",
		$handle->{timer});
	return $handle;
}

sub finish_sql
{
	my ($handle) = @_;
	my $exit;
	eval {
		$handle->{run}->finish;
		$exit = $?;
		1;
	} or do {
		my $error = $@;
		$handle->{run}->kill_kill;
		croak "psql session $handle->{name} did not end: $error\nstderr: "
		  . slurp_file("$handle->{file}.err");
	};
	my %result = (
		ok => $exit == 0 ? 1 : 0,
		exit => $exit >> 8,
		stdout => slurp_file("$handle->{file}.out"),
		stderr => slurp_file("$handle->{file}.err"),
		elapsed => time - $handle->{started},);
	chomp $result{stdout};
	PsqlError::parse(\%result);
	return \%result;
}

sub try_sql
{
	my ($node, $sql, %options) = @_;
	return finish_sql(start_sql($node, $sql, %options));
}

=pod

=item retry_sql($node, $sql, $seconds) => $result

Runs C<$sql> on the node (as try_sql) until it succeeds, for at most
C<$seconds>; returns the result of the last attempt.

=cut

sub retry_sql
{
	my ($node, $sql, $seconds) = @_;
	my $deadline = time + $seconds;
	my $r;
	do
	{
		$r = try_sql($node, $sql);
		return $r if $r->{ok};
		usleep(200_000);
	} while (time < $deadline);
	return $r;
}

sub running
{
	my ($handle) = @_;
	return $handle->{run}->pumpable;
}

sub backend_pid
{
	my ($node, $name) = @_;
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = '$name' AND backend_type = 'client backend'"
	) or croak "no session named $name connected";
	return $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE application_name = '$name' AND backend_type = 'client backend'");
}

=pod

=item set_config($node, name => value, ...)

ALTER SYSTEM SET each setting (undef: RESET), reload, and wait until the
postmaster has reloaded, so that every session started from then on sees the
new values (an open session sees them from its next statement).

=cut

sub set_config
{
	my ($node, @pairs) = @_;
	my @sql;
	while (my ($name, $value) = splice(@pairs, 0, 2))
	{
		push @sql,
		  defined $value
		  ? "ALTER SYSTEM SET $name = '$value';"
		  : "ALTER SYSTEM RESET $name;";
	}
	# A session started after the postmaster reloaded reports a new load
	# time (compared with <>, not >: the test may have set the clock back).
	my $loaded = $node->safe_psql('postgres', 'SELECT pg_conf_load_time()');
	$node->safe_psql('postgres', join("\n", @sql, 'SELECT pg_reload_conf();'));
	$node->poll_query_until('postgres',
		"SELECT pg_conf_load_time() <> '$loaded'")
	  or croak 'the configuration was not reloaded';
	my $errors = $node->safe_psql('postgres',
		'SELECT string_agg(name || \': \' || error, \', \') FROM pg_file_settings WHERE error IS NOT NULL');
	croak "configuration errors: $errors" if $errors ne '';
	return;
}


=pod

=back

=cut

1;
