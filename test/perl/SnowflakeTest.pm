# Helpers for snowflake's cluster-level TAP tests (test/t/*.pl).
#
# Built on PostgreSQL's own PostgreSQL::Test::Cluster; this module only adds
# what the snowflake tests share: a node set up to preload the extension, a
# wall clock that a test can step (libfaketime), a real crash (every server
# process killed), SQL sessions run in the background, and the standard
# checks on a table of issued IDs. Every function is documented below, and
# the API is kept small and stable: add to it, do not change what exists.

=pod

=head1 NAME

SnowflakeTest - shared helpers for snowflake's cluster tests

=head1 SYNOPSIS

  use PostgreSQL::Test::Utils;
  use Test::More;
  use SnowflakeTest;

  my $node = SnowflakeTest::init_node('main', faketime => 1,
      conf => ['snowflake.max_clock_backward_wait = 2s']);
  SnowflakeTest::start_node($node);
  $node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

  SnowflakeTest::set_clock_offset($node, -0.5);   # the server's clock steps back 500 ms
  my $r = SnowflakeTest::try_sql($node, 'SELECT snowflake_nextval()');
  is($r->{sqlstate}, undef, 'no error') or diag $r->{stderr};

  done_testing();

=head1 CONVENTIONS

=over

=item *

Nodes made by C<init_node> preload snowflake, have C<snowflake.datacenter_id>
and C<snowflake.worker_id> set (defaults 3 and 7), and are remembered: if the
test fails, the tail of each node's server log is printed at exit.

=item *

Clock offsets are in seconds relative to the real clock (fractions allowed,
e.g. C<-0.5>). Only the server processes of a node started with
C<faketime =E<gt> 1> see the offset; CLOCK_MONOTONIC is never faked, so
waits measured on it (snowflake.max_clock_backward_wait) stay real.

=item *

A table of IDs checked by C<check_ids> has the columns C<b> (which backend or
session issued the row), C<g> (the row's position in that backend's issue
order) and C<id> (the ID). C<create_id_writers> makes one.

=back

=cut

package SnowflakeTest;

use strict;
use warnings FATAL => 'all';

use Carp;
use Config;
use File::Basename qw(dirname);
use File::Spec;
use IPC::Run;
use POSIX qw(WNOHANG);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::RecursiveCopy;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use PsqlError;

our $FAKETIME_LIBRARY =
  $ENV{SNOWFLAKE_FAKETIME_LIBRARY}
  // '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

my @nodes;    # every node init_node made, for the log dump at exit

# PostgreSQL::Test::Cluster::init runs $PG_REGRESS --config-auth; PostgreSQL's
# own build sets it, prove run by hand does not. Use the installed one.
if (!$ENV{PG_REGRESS})
{
	my $pgxs = `pg_config --pgxs`;
	chomp $pgxs;
	$ENV{PG_REGRESS} = dirname(dirname($pgxs)) . '/test/regress/pg_regress';
}

# Orphaned server processes (a postmaster whose pg_ctl exited, backends whose
# postmaster was killed) are re-parented to the nearest "subreaper". On
# machines whose PID 1 never reaps them they would stay zombies, and a zombie
# postmaster keeps its postmaster.pid looking alive. Becoming the subreaper
# lets crash_node() reap them. prctl(PR_SET_CHILD_SUBREAPER = 36, 1); syscall
# 157 is prctl on x86_64 Linux. Failure is harmless (see crash_node()).
if ($Config{archname} =~ /^x86_64-linux/)
{
	syscall(157, 36, 1, 0, 0, 0);
}

=pod

=head1 FUNCTIONS

=head2 Nodes

=over

=item init_node($name, %options) => $node

Creates (initdb) a node that preloads snowflake; does not start it.
Options:

  datacenter_id     default 3 (undef: leave unset)
  worker_id         default 7 (undef: leave unset)
  allows_streaming  passed to PostgreSQL::Test::Cluster::init
  has_archiving     passed to PostgreSQL::Test::Cluster::init (WAL archive)
  faketime          1: the server runs under libfaketime (see set_clock_offset)
  conf              array ref of extra postgresql.conf lines
  install_path      another PostgreSQL installation to run (its bin/ holds
                    initdb and postgres: /usr/lib/postgresql/NN on Debian),
                    passed to PostgreSQL::Test::Cluster::new; snowflake must
                    be installed into it too
  initdb_extra      array ref of extra initdb arguments (--data-checksums)

=cut

sub init_node
{
	my ($name, %options) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name,
		$options{install_path} ? (install_path => $options{install_path}) : ());
	$node->init(
		allows_streaming => $options{allows_streaming} // 0,
		has_archiving => $options{has_archiving} // 0,
		$options{initdb_extra} ? (extra => $options{initdb_extra}) : ());
	_base_conf($node, %options);
	enable_faketime($node) if $options{faketime};
	push @nodes, $node;
	return $node;
}

sub _base_conf
{
	my ($node, %options) = @_;
	my $datacenter =
	  exists $options{datacenter_id} ? $options{datacenter_id} : 3;
	my $worker = exists $options{worker_id} ? $options{worker_id} : 7;
	my @lines = (
		"shared_preload_libraries = 'snowflake'",
		# The framework logs every statement; DDL is enough to read a log.
		"log_statement = 'ddl'",
		"max_connections = 40",
		"shared_buffers = 32MB",);
	push @lines, "snowflake.datacenter_id = $datacenter" if defined $datacenter;
	push @lines, "snowflake.worker_id = $worker" if defined $worker;
	push @lines, @{ $options{conf} // [] };
	$node->append_conf('postgresql.conf', join("\n", @lines));
	return;
}

=pod

=item init_standby($primary, $name, %options) => $node

Takes a base backup of the running C<$primary> (which must have been made with
C<allows_streaming =E<gt> 1>) and makes a streaming standby of it, not
started. It inherits the primary's configuration, snowflake identity
included, as a real standby would. Options: C<faketime> and C<conf> as for
init_node.

The standby streams through a physical replication slot made on the primary
before the backup (named C<$name>), so that a loaded machine on which the
standby falls behind a primary that writes fast never finds the WAL it needs
removed by a checkpoint (a CI root once did: "requested WAL segment ... has
already been removed").

=cut

sub init_standby
{
	my ($primary, $name, %options) = @_;
	my $backup = "for_$name";
	$primary->safe_psql('postgres',
		"SELECT pg_catalog.pg_create_physical_replication_slot('$name', true)");
	$primary->backup($backup);
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init_from_backup($primary, $backup, has_streaming => 1);
	$node->append_conf('postgresql.conf', "primary_slot_name = '$name'");
	$node->append_conf('postgresql.conf', join("\n", @{ $options{conf} }))
	  if $options{conf};
	enable_faketime($node) if $options{faketime};
	push @nodes, $node;
	return $node;
}

=pod

=item remember_node($node)

Counts a node made otherwise (by C<PostgreSQL::Test::Cluster-E<gt>new> and a
restore, say) among the nodes whose server log tail is printed if the test
fails.

=cut

sub remember_node
{
	my ($node) = @_;
	push @nodes, $node;
	return;
}

=pod

=item start_node($node) / restart_node($node, $mode)

Start the node (under libfaketime if it was made with C<faketime =E<gt> 1>,
checking that the server's clock then reads the current offset); restart it
after C<$node-E<gt>stop($mode)> (default mode C<fast>). Always use these
instead of C<$node-E<gt>start> / C<restart> on a faked node: the framework's
methods would start it on the real clock.

=cut

sub start_node
{
	my ($node) = @_;
	_start_server($node, sub { $node->start; });
	return;
}

# Runs $start (which starts the node's server) under libfaketime if the node
# was made with faketime => 1, then checks the server's clock.
sub _start_server
{
	my ($node, $start) = @_;
	my $faketime = $node->{_snowflake_faketime};
	if (!$faketime)
	{
		$start->();
		return;
	}
	{
		# Only pg_ctl and the server get these (the framework copies %ENV).
		local $ENV{LD_PRELOAD} = $FAKETIME_LIBRARY;
		local $ENV{FAKETIME_TIMESTAMP_FILE} = $faketime;
		local $ENV{FAKETIME_NO_CACHE} = '1';
		local $ENV{FAKETIME_DONT_FAKE_MONOTONIC} = '1';
		$start->();
	}
	_verify_offset($node, _read_offset($node));
	return;
}

sub restart_node
{
	my ($node, $mode) = @_;
	$node->stop($mode // 'fast');
	start_node($node);
	return;
}

=pod

=item crash_node($node)

Kills every process of the running node with SIGKILL at once (postmaster
first, so it cannot start new ones or clean up), waits until all of them are
gone, and leaves the data directory as a power cut would (as far as the page
cache allows: the framework runs with fsync = off). Start it again with
start_node. Returns the number of processes killed.

=cut

sub crash_node
{
	my ($node) = @_;
	my $postmaster = _postmaster_pid($node);
	croak 'crash_node: node ' . $node->name . ' is not running'
	  unless $postmaster;

	# Stopped, the postmaster can neither fork nor notice anything while its
	# children are listed.
	kill 'STOP', $postmaster;
	my @children = _children_of($postmaster);
	$node->kill9;    # SIGKILL to the postmaster; the framework forgets it
	kill 'KILL', @children if @children;

	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	for my $pid ($postmaster, @children)
	{
		while (_alive($pid))
		{
			croak "crash_node: process $pid survived SIGKILL" if time > $deadline;
			usleep(20_000);
		}
		waitpid($pid, WNOHANG);    # reaps it if we are its subreaper
	}

	# Should the postmaster still be an unreaped zombie (not our child), its
	# pid would make postmaster.pid look alive: the file is stale, remove it.
	my $pidfile = $node->data_dir . '/postmaster.pid';
	if (-e $pidfile && _is_zombie($postmaster))
	{
		note "crash_node: removing stale postmaster.pid of zombie $postmaster";
		unlink $pidfile;
	}
	note sprintf('crash_node: killed postmaster %d and %d children',
		$postmaster, scalar @children);
	return 1 + @children;
}

=pod

=item snapshot_node($node, $directory)

Copies the running node's data directory to C<$directory> as an atomic
file-system snapshot (LVM, ZFS, a virtual machine's) would take it: every
server process is stopped (SIGSTOP) during the copy and resumed after it, so
the copy holds what the files held at one instant (the framework runs with
fsync = off: what a snapshot sees is the page cache, which the copy reads).
postmaster.pid is left out, as the original's postmaster still runs on this
machine. Start a node made from the copy as after a crash.

=cut

sub snapshot_node
{
	my ($node, $directory) = @_;
	my $postmaster = _postmaster_pid($node);
	croak 'snapshot_node: node ' . $node->name . ' is not running'
	  unless $postmaster && _alive($postmaster);
	kill 'STOP', $postmaster;    # first, so that it starts no new process
	my @children = _children_of($postmaster);
	kill 'STOP', @children if @children;
	my $copied = eval {
		PostgreSQL::Test::RecursiveCopy::copypath($node->data_dir, $directory,
			filterfn => sub { return $_[0] ne 'postmaster.pid'; });
		1;
	};
	my $error = $@;
	kill 'CONT', @children if @children;
	kill 'CONT', $postmaster;
	croak "snapshot_node: $error" unless $copied;
	chmod 0700, $directory or croak "chmod $directory: $!";
	note sprintf('snapshot of node %s taken with %d processes stopped',
		$node->name, 1 + @children);
	return;
}

=pod

=item run_pg_upgrade($old, $new, %options) => ($ok, $stdout, $stderr)

Runs the new cluster's C<pg_upgrade> from the stopped C<$old> into the
stopped C<$new> (C<--no-sync>), in a working directory of its own (it writes
its logs there). Options: C<mode> (a list of more options, such as
C<['--link']>) and C<timeout> (seconds, 600 by default). Returns whether it
succeeded and what it printed; on failure, C<$new>'s pg_upgrade logs are
added to C<$stderr>.

=cut

sub run_pg_upgrade
{
	my ($old, $new, %options) = @_;
	my $work = PostgreSQL::Test::Utils::tempdir;
	my ($stdout, $stderr) = ('', '');
	my $ok = IPC::Run::run(
		[
			$new->config_data('--bindir') . '/pg_upgrade', '--no-sync',
			'-b', $old->config_data('--bindir'),
			'-B', $new->config_data('--bindir'),
			'-d', $old->data_dir,
			'-D', $new->data_dir,
			'-s', $new->host,
			'-p', $old->port,
			'-P', $new->port,
			@{ $options{mode} // [] }
		],
		'>', \$stdout, '2>', \$stderr,
		init => sub { chdir $work or die "chdir $work: $!" },
		IPC::Run::timeout($options{timeout} // 600));
	$stderr .= join('',
		map { "--- $_\n" . PostgreSQL::Test::Utils::slurp_file($_) }
		  glob($new->data_dir . '/pg_upgrade_output.d/*/log/*'))
	  unless $ok;
	return ($ok, $stdout, $stderr);
}

=pod

=item start_node_at($node, $path, %options)

Starts the node's server as C<pg_ctl -D $path>, where C<$path> is a symbolic
link that this first makes, or re-points at once (a new link renamed over
it), to the node's own data directory. PostgreSQL keeps the path as it was
given (made absolute, never resolved): it is the server's C<data_directory>,
line 2 of its postmaster.pid, and what snowflake sends the registry as the
holder's data directory. The server changes into the directory the link
names as it starts and uses relative paths from then on, so re-pointing the
link later leaves a running server where it is.

So two nodes started one after the other at one C<$path> are two running
postmasters with the same data directory as PostgreSQL reports it: with the
second a copy of the first (C<snapshot_node>) given the first's port (its
own socket directory, C<own_host =E<gt> 1>: the port's lock file lives
there, and nodes listen on no TCP address), they have the same system
identifier, timeline, host name, port and data directory, as a cloned
machine has, without namespaces (which a chroot, as CI's roots are, cannot
make). Their postmaster.pid files and shared memory keys (derived from the
inode of the directory the link names) stay their own.

The node's postgresql.conf gets C<unix_socket_directories> set to its own
socket directory (a copy carries the original's). Options:

  cluster_name  the server's cluster_name (default: the node's name); a
                clone that must look like its original passes the
                original's name

Stop, crash and kill9 the node as usual: they use its own data directory.
Under libfaketime as C<start_node>.

=cut

sub start_node_at
{
	my ($node, $path, %options) = @_;
	croak 'start_node_at: node ' . $node->name . ' is already running'
	  if defined $node->{_pid};
	$path = File::Spec->rel2abs($path);
	croak "start_node_at: $path exists and is not a symbolic link"
	  if -e $path && !-l $path;
	my $new = "$path.new";
	unlink $new;
	symlink($node->data_dir, $new) or croak "symlink $new: $!";
	rename($new, $path) or croak "rename $new to $path: $!";

	# The last setting in the file counts; a copy's names the original's.
	my $socket_dir = $node->host;
	my @set = slurp_file($node->data_dir . '/postgresql.conf')
	  =~ /^\s*unix_socket_directories\s*=\s*'([^']*)'/mg;
	$node->append_conf('postgresql.conf', "unix_socket_directories = '$socket_dir'")
	  unless @set && $set[-1] eq $socket_dir;

	my $cluster_name = $options{cluster_name} // $node->name;
	note sprintf('starting node %s at %s (a link to %s)',
		$node->name, $path, $node->data_dir);
	_start_server(
		$node,
		sub {
			local %ENV = $node->_get_env(PGAPPNAME => undef);
			my $ret = PostgreSQL::Test::Utils::system_log('pg_ctl', '-w', '-D', $path,
				'-l', $node->logfile, '-o', "--cluster-name=$cluster_name", 'start');
			$node->_update_pid($ret == 0 ? 1 : -1);
			croak 'start_node_at: pg_ctl start failed for node ' . $node->name
			  . ":\n" . log_tail($node)
			  if $ret != 0;
		});
	return;
}

sub _postmaster_pid
{
	my ($node) = @_;
	my $file = $node->data_dir . '/postmaster.pid';
	return undef unless -e $file;
	my ($pid) = split /\n/, slurp_file($file);
	return $pid;
}

sub _proc_stat
{
	my ($pid) = @_;
	open my $fh, '<', "/proc/$pid/stat" or return undef;
	my $line = <$fh>;
	close $fh;
	return undef unless defined $line && $line =~ /\)\s+(\S)\s+(\d+)/;
	return { state => $1, ppid => $2 };
}

sub _children_of
{
	my ($parent) = @_;
	my @children;
	opendir my $dh, '/proc' or croak "cannot read /proc: $!";
	for my $pid (grep { /^\d+$/ } readdir $dh)
	{
		my $stat = _proc_stat($pid);
		push @children, $pid
		  if $stat && $stat->{ppid} == $parent && $stat->{state} !~ /[ZX]/;
	}
	closedir $dh;
	return @children;
}

sub _is_zombie
{
	my $stat = _proc_stat($_[0]);
	return $stat && $stat->{state} =~ /[ZX]/;
}

sub _alive
{
	my $stat = _proc_stat($_[0]);
	return $stat && $stat->{state} !~ /[ZX]/;
}

=pod

=back

=head2 The clock (libfaketime)

=over

=item faketime_available() => bool

Whether libfaketime is installed. A test that needs it does
C<plan skip_all =E<gt> ... unless SnowflakeTest::faketime_available();>.

=cut

sub faketime_available { return -r $FAKETIME_LIBRARY; }

=pod

=item enable_faketime($node)

Makes the node run under libfaketime from its next start_node, with offset
+0. init_node and init_standby call it for C<faketime =E<gt> 1>.

=cut

sub enable_faketime
{
	my ($node) = @_;
	croak "libfaketime not found at $FAKETIME_LIBRARY"
	  unless faketime_available();
	$node->{_snowflake_faketime} = $node->basedir . '/faketime.rc';
	_write_offset($node, 0);
	return;
}

=pod

=item set_clock_offset($node, $seconds) => $measured_ms

Steps the node's wall clock to real time + C<$seconds> (negative: behind;
fractions allowed), at once for every process of the node. If the node is
running, waits until the server's clock_timestamp() reads the new offset and
returns the offset measured (ms); dies if it never does.

=item server_clock_offset_ms($node) => ($offset_ms, $uncertainty_ms)

How far the server's clock_timestamp() is from this process's real clock,
measured over one query, and the half round trip that bounds the error.

=cut

sub set_clock_offset
{
	my ($node, $seconds) = @_;
	croak 'set_clock_offset: node ' . $node->name . ' is not under faketime'
	  unless $node->{_snowflake_faketime};
	_write_offset($node, $seconds);
	my $postmaster = _postmaster_pid($node);
	return undef unless $postmaster && _alive($postmaster);
	return _verify_offset($node, $seconds);
}

sub server_clock_offset_ms
{
	my ($node) = @_;
	my $before = time;
	my $server = $node->safe_psql('postgres',
		'SELECT extract(epoch FROM clock_timestamp())');
	my $after = time;
	return (($server - ($before + $after) / 2) * 1000,
		($after - $before) / 2 * 1000);
}

sub _write_offset
{
	my ($node, $seconds) = @_;
	my $file = $node->{_snowflake_faketime};
	my $text = sprintf('%+.3f', $seconds);
	$text =~ s/\.?0+$// if $text =~ /\./;
	$text = '+0' if $text eq '+' || $text eq '-' || $text eq '-0';
	# Written to a temporary file and renamed, so that a server process never
	# reads a half-written offset.
	open my $fh, '>', "$file.tmp" or croak "cannot write $file.tmp: $!";
	print $fh "$text\n";
	close $fh or croak "cannot write $file.tmp: $!";
	rename "$file.tmp", $file or croak "cannot rename to $file: $!";
	$node->{_snowflake_offset} = $seconds;
	note 'clock of node ' . $node->name . " set to real time $text s";
	return;
}

sub _read_offset { return $_[0]->{_snowflake_offset} // 0; }

sub _verify_offset
{
	my ($node, $seconds) = @_;
	my ($offset, $uncertainty);
	for (1 .. 50)
	{
		($offset, $uncertainty) = server_clock_offset_ms($node);
		return $offset
		  if abs($offset - $seconds * 1000) <= $uncertainty + 50;
		usleep(100_000);
	}
	croak sprintf(
		'the clock of node %s reads %+.0f ms from real time (+/- %.0f ms), not %+.0f ms: is libfaketime working?',
		$node->name, $offset, $uncertainty, $seconds * 1000);
}

=pod

=back

=head2 SQL

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

=head2 IDs

=over

=item create_id_writers($node)

Creates (in database postgres) the table C<ids(b int, g bigint, id bigint)>,
a table C<writers_stop> and the procedure
C<snowflake_test_write(b int, batch int, max_batches int)>, which inserts
batches of C<batch> IDs for backend C<b>, COMMITs after each batch, and stops
when a row is in writers_stop or after max_batches batches.

=item start_writers($node, $count, %options) => @handles / stop_writers($node, @handles) => @results

Starts C<$count> sessions (application_name writer_1 ... writer_N, b = 1..N)
running snowflake_test_write (options C<batch>, default 200;
C<max_batches>, default 100000; C<first>, the first b, default 1);
stop_writers makes them stop after their current batch and waits for them.

=cut

sub create_id_writers
{
	my ($node) = @_;
	$node->safe_psql('postgres', q{
		CREATE TABLE IF NOT EXISTS ids (b int NOT NULL, g bigint NOT NULL, id bigint NOT NULL);
		CREATE TABLE IF NOT EXISTS writers_stop ();
		CREATE OR REPLACE PROCEDURE snowflake_test_write(b int, batch int, max_batches int)
		LANGUAGE plpgsql AS $$
		DECLARE
			done bigint := coalesce((SELECT max(g) FROM ids WHERE ids.b = snowflake_test_write.b), 0);
		BEGIN
			FOR k IN 0 .. max_batches - 1 LOOP
				EXIT WHEN EXISTS (SELECT FROM writers_stop);
				INSERT INTO ids SELECT snowflake_test_write.b, done + k::bigint * batch + g, snowflake_nextval()
				FROM generate_series(1, batch) g;
				COMMIT;
			END LOOP;
		END $$;
	});
	return;
}

sub start_writers
{
	my ($node, $count, %options) = @_;
	my $batch = $options{batch} // 200;
	my $max_batches = $options{max_batches} // 100000;
	my $first = $options{first} // 1;
	$node->safe_psql('postgres', 'DELETE FROM writers_stop');
	my @handles;
	for my $b ($first .. $first + $count - 1)
	{
		push @handles,
		  start_sql($node, "CALL snowflake_test_write($b, $batch, $max_batches);",
			name => "writer_$b");
	}
	return @handles;
}

sub stop_writers
{
	my ($node, @handles) = @_;
	$node->safe_psql('postgres', 'INSERT INTO writers_stop DEFAULT VALUES');
	return map { finish_sql($_) } @handles;
}

=pod

=item check_ids($node, $table, $label, %options)

Runs the standard tests on a table with columns b, g, id: no ID appears twice,
and within each b the IDs strictly increase with g. With
C<rows =E<gt> $n>, also that the table holds $n rows. On failure, prints
examples (with the IDs decoded). Returns the number of rows.

=cut

sub check_ids
{
	my ($node, $table, $label, %options) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my ($rows, $distinct) = split /\|/,
	  $node->safe_psql('postgres',
		"SELECT count(*), count(DISTINCT id) FROM $table");
	is($rows, $options{rows}, "$label: $options{rows} rows")
	  if defined $options{rows};
	is($distinct, $rows, "$label: all $rows IDs distinct")
	  or diag "IDs issued more than once (id | times | decoded):\n"
	  . $node->safe_psql('postgres', qq{
		SELECT id, count(*), snowflake_decode(id) FROM $table
		GROUP BY id HAVING count(*) > 1 ORDER BY id LIMIT 10});
	my $disorder = $node->safe_psql('postgres', qq{
		SELECT count(*) FROM (
			SELECT id, lag(id) OVER (PARTITION BY b ORDER BY g) AS previous FROM $table
		) s WHERE previous >= id});
	is($disorder, 0, "$label: IDs strictly increasing within each backend")
	  or diag "IDs not above the previous one of the same backend "
	  . "(b | g | previous | id | decoded previous | decoded id):\n"
	  . $node->safe_psql('postgres', qq{
		SELECT b, g, previous, id, snowflake_decode(previous), snowflake_decode(id) FROM (
			SELECT b, g, id, lag(id) OVER (PARTITION BY b ORDER BY g) AS previous FROM $table
		) s WHERE previous >= id ORDER BY b, g LIMIT 10});
	return $rows;
}

=pod

=back

=head2 The registry

=over

=item start_registry(%options) => ($registry, $conninfo)

Starts a cluster holding an empty database C<registry>, and returns it with a
libpq connection string for it, to put in snowflake.registry (append
C<user=...> and other options as needed). Option: C<allows_streaming> (passed
to PostgreSQL::Test::Cluster::init), for a registry that gets a standby
(init_standby).

=item registry_status($node, $columns) => $text

=item registry_row($registry, $datacenter_id, $worker_id, $columns) => $text

C<$columns> (SQL) of the registry table's row of that identity, read on the
registry server.

=item id_ms($node, $sql) => $ms

The timestamp, in ms since 1970, of the ID that C<$sql> (one bigint) returns
on the node, decoded there; empty if it returns NULL.

C<$columns> of snowflake_registry_status() on the node.

=item wait_for_registry($node, $condition, $label)

Polls until C<$condition> (SQL over snowflake_registry_status()) is true, as
one test named C<$label> (by default the condition), prefixed with the node's
name; on failure shows the whole status.

=cut

sub start_registry
{
	my (%options) = @_;
	my $registry = PostgreSQL::Test::Cluster->new('registry');
	$registry->init(allows_streaming => $options{allows_streaming} // 0);
	$registry->start;
	$registry->safe_psql('postgres', 'CREATE DATABASE registry');
	push @nodes, $registry;
	return ($registry,
		'host=' . $registry->host . ' port=' . $registry->port . ' dbname=registry');
}

=pod

=item registry_table_sql() => $sql

The C<CREATE TABLE public.snowflake_registry> of this version (as
doc/registry.md gives it), for tests that make the table themselves (its
owner, its grants) before a node's worker would.

=cut

sub registry_table_sql
{
	return q{
CREATE TABLE public.snowflake_registry (
    datacenter_id        integer     NOT NULL,
    worker_id            integer     NOT NULL,
    system_identifier    numeric(20) NOT NULL,
    timeline             bigint      NOT NULL,
    host                 text        NOT NULL,
    data_directory       text        NOT NULL,
    cluster_name         text        NOT NULL,
    claimed_at           timestamptz NOT NULL,
    renewed_at           timestamptz NOT NULL,
    expires_at           timestamptz NOT NULL,
    ids_before           timestamptz NOT NULL,
    inherited_ids_before timestamptz,
    token                bigint      NOT NULL DEFAULT 0,
    released             boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (datacenter_id, worker_id)
);
};
}

sub registry_row
{
	my ($registry, $datacenter_id, $worker_id, $columns) = @_;
	return $registry->safe_psql('registry',
		"SELECT $columns FROM snowflake_registry WHERE datacenter_id = $datacenter_id AND worker_id = $worker_id"
	);
}

sub id_ms
{
	my ($node, $sql) = @_;
	return $node->safe_psql('postgres',
		"SELECT floor(extract(epoch FROM (snowflake_decode(($sql))).ts) * 1000)::bigint");
}

sub registry_status
{
	my ($node, $columns) = @_;
	return $node->safe_psql('postgres',
		"SELECT $columns FROM snowflake_registry_status()");
}

sub wait_for_registry
{
	my ($node, $condition, $label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	ok( $node->poll_query_until('postgres',
			"SELECT $condition FROM snowflake_registry_status()"),
		$node->name . ': ' . ($label // $condition))
	  or diag registry_status($node, '*');
	return;
}

=pod

=back

=head2 Logs

=over

=item mapped_library($node, $first, $pid) => $paths

The snowflake.so files a process of the node has mapped (its
F</proc/PID/maps>, read by the server), sorted, joined by spaces: the
session's own backend after running the SQL C<$first> in it (its output
dropped), or, given C<$pid>, that process (a background worker's).

=item log_tail($node, $lines) => $text

The last C<$lines> (default 40) lines of the node's server log. At exit, if
any test failed or the script died, the tail of the log of every node made
here is printed with diag.

=back

=cut

sub mapped_library
{
	my ($node, $first, $pid) = @_;
	my $sql = defined $first ? "$first \\g /dev/null\n" : '';
	$pid //= 'pg_backend_pid()';
	my $maps = $node->safe_psql('postgres',
		$sql . "SELECT pg_read_file('/proc/' || $pid || '/maps')");
	my %paths = map { $_ => 1 } $maps =~ m{(\S*/snowflake\.so)$}mg;
	return join(' ', sort keys %paths);
}

sub log_tail
{
	my ($node, $lines) = @_;
	$lines //= 40;
	return '' unless -e $node->logfile;
	my @all = split /\n/, slurp_file($node->logfile);
	splice(@all, 0, @all - $lines) if @all > $lines;
	return join("\n", @all) . "\n";
}

# --- h-stale (issue 44): the replication origin that keeps the bound's second copy

=pod

=head2 The bound's replication origin (issue 44, branch h-stale)

=over

=item wait_for_bound_origin($node)

Waits until the node's replication origin C<snowflake_bound> has a state
(the registry worker sets it up once the bound is known:
src/pg/bound/bound_register.cpp); dies if it never does.

=item forget_bound_origin($node)

Removes, in the stopped node's data directory, the checkpoint of its
replication origins (F<pg_logical/replorigin_checkpoint>), so that its next
start finds no state in C<snowflake_bound>, as a data directory of 1.7 or
one whose origin was never set up: for tests of what a node does without
it (the check of the databases). The node must have been stopped cleanly,
so that no WAL after its last checkpoint advances an origin again.

=back

=cut

sub wait_for_bound_origin
{
	my ($node) = @_;
	$node->poll_query_until('postgres', q{
		SELECT s.remote_lsn <> '0/0' FROM pg_catalog.pg_replication_origin_status s
		JOIN pg_catalog.pg_replication_origin o ON o.roident = s.local_id
		WHERE o.roname = 'snowflake_bound'})
	  or croak 'node ' . $node->name . ': the replication origin snowflake_bound has no state';
	return;
}

sub forget_bound_origin
{
	my ($node) = @_;
	my $checkpoint = $node->data_dir . '/pg_logical/replorigin_checkpoint';
	unlink $checkpoint or $!{ENOENT} or croak "cannot remove $checkpoint: $!";
	return;
}

# --- end of h-stale

END
{
	my $exit = $?;
	if ($exit != 0 || !Test::More->builder->is_passing)
	{
		for my $node (@nodes)
		{
			diag '--- tail of the server log of node ' . $node->name
			  . ' (' . $node->logfile . ") ---\n" . log_tail($node, 40);
		}
	}
	$? = $exit;
}

1;
