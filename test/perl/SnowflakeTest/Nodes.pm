# The nodes of a test: made to preload snowflake, started (under
# libfaketime if asked), restarted, crashed, copied as a snapshot,
# upgraded with pg_upgrade, started at a path of one's choosing. Every node
# made here is remembered: if the test fails, the tail of each one's server
# log is printed at exit.
package SnowflakeTest::Nodes;

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
use SnowflakeTest::Clock;
use SnowflakeTest::Logs;
use SnowflakeTest::Processes;

our @nodes;    # every node made here, for the log dump at exit

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

=head1 NAME

SnowflakeTest::Nodes - the nodes of snowflake's cluster tests

=head1 FUNCTIONS

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
	SnowflakeTest::Clock::enable_faketime($node) if $options{faketime};
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
	SnowflakeTest::Clock::enable_faketime($node) if $options{faketime};
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
	SnowflakeTest::Clock::_start_server($node, sub { $node->start; });
	return;
}

# Runs $start (which starts the node's server) under libfaketime if the node
# was made with faketime => 1, then checks the server's clock.
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
	my $postmaster = SnowflakeTest::Processes::_postmaster_pid($node);
	croak 'crash_node: node ' . $node->name . ' is not running'
	  unless $postmaster;

	# Stopped, the postmaster can neither fork nor notice anything while its
	# children are listed.
	kill 'STOP', $postmaster;
	my @children = SnowflakeTest::Processes::_children_of($postmaster);
	$node->kill9;    # SIGKILL to the postmaster; the framework forgets it
	kill 'KILL', @children if @children;

	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	for my $pid ($postmaster, @children)
	{
		while (SnowflakeTest::Processes::_alive($pid))
		{
			croak "crash_node: process $pid survived SIGKILL" if time > $deadline;
			usleep(20_000);
		}
		waitpid($pid, WNOHANG);    # reaps it if we are its subreaper
	}

	# Should the postmaster still be an unreaped zombie (not our child), its
	# pid would make postmaster.pid look alive: the file is stale, remove it.
	my $pidfile = $node->data_dir . '/postmaster.pid';
	if (-e $pidfile && SnowflakeTest::Processes::_is_zombie($postmaster))
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
	my $postmaster = SnowflakeTest::Processes::_postmaster_pid($node);
	croak 'snapshot_node: node ' . $node->name . ' is not running'
	  unless $postmaster && SnowflakeTest::Processes::_alive($postmaster);
	kill 'STOP', $postmaster;    # first, so that it starts no new process
	my @children = SnowflakeTest::Processes::_children_of($postmaster);
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
	SnowflakeTest::Clock::_start_server(
		$node,
		sub {
			local %ENV = $node->_get_env(PGAPPNAME => undef);
			my $ret = PostgreSQL::Test::Utils::system_log('pg_ctl', '-w', '-D', $path,
				'-l', $node->logfile, '-o', "--cluster-name=$cluster_name", 'start');
			$node->_update_pid($ret == 0 ? 1 : -1);
			croak 'start_node_at: pg_ctl start failed for node ' . $node->name
			  . ":\n" . SnowflakeTest::Logs::log_tail($node)
			  if $ret != 0;
		});
	return;
}


=pod

=item wait_until_accepting($node)

Waits until the node's server accepts connections (pg_isready), as after a
backend's crash, when the postmaster reinitializes and replays WAL; dies if
it does not within the framework's timeout. Call it before poll_query_until
there: a psql that is refused before it reads its query makes IPC::Run fail
the test with a broken pipe instead of trying again.

=cut

sub wait_until_accepting
{
	my ($node) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $deadline)
	{
		return if IPC::Run::run([ 'pg_isready', '-q', '-d', $node->connstr('postgres') ]);
		usleep(100_000);
	}
	croak 'node ' . $node->name . ' does not accept connections';
}

=back

=cut

END
{
	my $exit = $?;
	if ($exit != 0 || !Test::More->builder->is_passing)
	{
		for my $node (@nodes)
		{
			diag '--- tail of the server log of node ' . $node->name
			  . ' (' . $node->logfile . ") ---\n" . SnowflakeTest::Logs::log_tail($node, 40);
		}
	}
	$? = $exit;
}

1;
