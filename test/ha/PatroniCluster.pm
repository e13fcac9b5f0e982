# A real Patroni cluster on loopback for the high-availability drills
# (test/ha/1NN_patroni_*.t): one etcd member as the DCS, two or three Patroni
# members each managing its own PostgreSQL with snowflake preloaded through
# Patroni's own postgresql.parameters, and clients that insert continuously
# and record every ID they were given.
#
# The drills run as root; etcd, Patroni and every PostgreSQL run as the
# postgres OS user, in one temporary directory (owned by postgres) per
# cluster. Nothing of Debian's own patroni or etcd service is used: no
# systemd unit, no /etc/patroni. Every process is started by this module and
# remembered by PID; cleanup() (run from an END block, also after a die or a
# SIGINT/SIGTERM) kills them by those PIDs and the PIDs in each data
# directory's postmaster.pid, with the postmasters' children, prints the
# logs' tails if the drill failed, and removes the directory (kept with
# SNOWFLAKE_HA_KEEP=1, to look into a failure).
#
# Ports: etcd client BASE, peer BASE+1; member i's PostgreSQL BASE+10+i and
# REST API BASE+20+i.
#
# A client is a forked process that runs, until told to stop, one psql per
# batch: `INSERT ... RETURNING id` of BATCH rows through a multi-host
# connection string with target_session_attrs=read-write (how an application
# finds the Patroni leader without a proxy). psql prints the IDs only after
# the commit has returned (for synchronous replication: after the standby has
# confirmed it), so an ID in a client's record was returned to that client as
# committed. Each batch is one line in the client's record:
#   ok START END ID ID ...        (Time::HiRes times)
#   err START END SQLSTATE MESSAGE
package PatroniCluster;

use strict;
use warnings FATAL => 'all';

use Carp;
use File::Path qw(remove_tree);
use File::Temp ();
use HTTP::Tiny;
use IO::Socket::INET;
use IPC::Run ();
use JSON::PP;
use POSIX ();
use Time::HiRes qw(time sleep);
use Test::More;

our $FAKETIME_LIBRARY =
  $ENV{SNOWFLAKE_FAKETIME_LIBRARY}
  // '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

my @clusters;    # every cluster made, for cleanup at exit
my $parent_pid = $$;

# Tools this module needs; a drill skips with this list when one is missing.
sub missing_tools
{
	my @missing = grep { !_in_path($_) } qw(patroni etcd);
	push @missing, 'psql (PG_BIN)' unless -x "$ENV{PG_BIN}/psql";
	push @missing, 'the postgres OS user' unless defined getpwnam('postgres');
	return @missing;
}

sub _in_path
{
	my ($tool) = @_;
	return scalar grep { -x "$_/$tool" } split /:/, $ENV{PATH};
}

sub faketime_available { return -r $FAKETIME_LIBRARY; }

=pod

=head1 PatroniCluster->new(%options)

  name              the Patroni scope (also in the temp dir's name)
  base_port         see the header; the drill's own range
  members           2 (default) or 3
  synchronous_mode  1 (default) or 0
  parameters        extra postgresql.parameters (a hash)

=cut

sub new
{
	my ($class, %options) = @_;
	croak 'PG_BIN is not set (scripts/test.sh ha sets it)' unless $ENV{PG_BIN};
	croak 'the Patroni drills run as root' unless $> == 0;
	my $self = bless {
		name => $options{name} // 'snowflake',
		base_port => $options{base_port} // croak('base_port is required'),
		members => $options{members} // 2,
		synchronous_mode => $options{synchronous_mode} // 1,
		parameters => $options{parameters} // {},
		patroni => {},    # member index => Patroni's PID
		clients => {},    # client number => PID
	}, $class;
	# A drill sharing the range (another run of it, or one in a fresh root
	# on the same loopback) would talk to the wrong servers: refuse. The
	# drills' ranges lie below the kernel's ephemeral ports (32768-60999 by
	# default), where no client's connection takes a port: in 56000-56199,
	# a connection the drill before had left closing (FIN_WAIT, up to 60 s)
	# once held a port this one needed. A socket of a drill just ended may
	# still linger: wait up to 10 s.
	for my $port ($self->{base_port}, $self->{base_port} + 1,
		map { ($self->pg_port($_), $self->rest_port($_)) } 0 .. $self->{members} - 1)
	{
		my $free = wait_until("port $port on 127.0.0.1 is free", 10, sub {
			my $socket = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $port,
				Proto => 'tcp', Listen => 1, ReuseAddr => 1) or return 0;
			close $socket;
			return 1;
		});
		croak "port $port on 127.0.0.1 is in use (another drill in this range?)" unless $free;
	}
	my ($uid, $gid) = (getpwnam('postgres'))[ 2, 3 ];
	@$self{qw(uid gid)} = ($uid, $gid);
	$self->{dir} = File::Temp::tempdir("snowflake-$self->{name}.XXXXXX",
		TMPDIR => 1, CLEANUP => 0);
	chmod 0755, $self->{dir};
	chown $uid, $gid, $self->{dir};
	push @clusters, $self;
	return $self;
}

sub dir { return $_[0]->{dir}; }
sub member_name { return "m$_[1]"; }
sub pg_port { return $_[0]->{base_port} + 10 + $_[1]; }
sub rest_port { return $_[0]->{base_port} + 20 + $_[1]; }
sub data_dir { return "$_[0]->{dir}/m$_[1]/data"; }
sub log_file { return "$_[0]->{dir}/m$_[1].log"; }

# The connection string an application uses: every member, the writable one.
sub connstr
{
	my ($self) = @_;
	my @members = 0 .. $self->{members} - 1;
	return join ' ',
	  'host=' . join(',', ('127.0.0.1') x @members),
	  'port=' . join(',', map { $self->pg_port($_) } @members),
	  'user=postgres dbname=postgres target_session_attrs=read-write connect_timeout=2';
}

# Forks, drops to the postgres user in a session of its own, and execs.
sub _spawn
{
	my ($self, $log, @command) = @_;
	my $pid = fork // croak "fork: $!";
	if ($pid == 0)
	{
		POSIX::setsid();
		$) = "$self->{gid} $self->{gid}";
		POSIX::setgid($self->{gid});
		POSIX::setuid($self->{uid});
		open STDIN, '<', '/dev/null';
		open STDOUT, '>>', $log or die "$log: $!";
		open STDERR, '>&', \*STDOUT;
		chdir $self->{dir};
		%ENV = (
			PATH => "$ENV{PG_BIN}:/usr/sbin:/usr/bin:/sbin:/bin",
			HOME => $self->{dir},
			LANG => 'C.UTF-8');
		exec @command or POSIX::_exit(127);
	}
	return $pid;
}

sub _write_file
{
	my ($self, $path, $text) = @_;
	open my $fh, '>', $path or croak "$path: $!";
	print $fh $text;
	close $fh;
	chown $self->{uid}, $self->{gid}, $path;
	return;
}

sub _mkdir
{
	my ($self, $path, $mode) = @_;
	mkdir $path, $mode // 0700 or croak "$path: $!";
	chown $self->{uid}, $self->{gid}, $path;
	return;
}

=pod

=head1 $cluster->start_etcd

One etcd member on loopback; returns when it answers.

=cut

sub start_etcd
{
	my ($self) = @_;
	my ($client, $peer) = map { "http://127.0.0.1:$_" } $self->{base_port}, $self->{base_port} + 1;
	$self->_mkdir("$self->{dir}/etcd");
	$self->{etcd} = $self->_spawn("$self->{dir}/etcd.log",
		'etcd', '--name' => 'e0', '--data-dir' => "$self->{dir}/etcd",
		'--listen-client-urls' => $client, '--advertise-client-urls' => $client,
		'--listen-peer-urls' => $peer, '--initial-advertise-peer-urls' => $peer,
		'--initial-cluster' => "e0=$peer", '--initial-cluster-state' => 'new',
		# Fast elections: one member, nothing to wait for.
		'--heartbeat-interval' => 50, '--election-timeout' => 500);
	wait_until('etcd answers', 30, sub {
		my $r = HTTP::Tiny->new(timeout => 1)->get("$client/health");
		return $r->{success} && $r->{content} =~ /"health":\s*"?true/;
	}) or $self->fail_with_logs('etcd did not start');
	return;
}

# Patroni's configuration for member $i (JSON is YAML).
sub _config
{
	my ($self, $i, $bin_dir) = @_;
	my $name = $self->member_name($i);
	my %parameters = (
		# snowflake, the same for every member (one identity per Patroni cluster)
		shared_preload_libraries => 'snowflake',
		'snowflake.datacenter_id' => 1,
		'snowflake.worker_id' => 1,
		# pg_rewind (checksums are on too: initdb --data-checksums)
		wal_log_hints => 'on',
		# Small and quiet: two cores, shared with others.
		max_connections => 40,
		shared_buffers => '32MB',
		max_wal_senders => 5,
		max_replication_slots => 5,
		wal_keep_size => '64MB',
		%{ $self->{parameters} });
	my $config = {
		scope => "snowflake-$self->{name}",
		namespace => '/snowflake-drills/',
		name => $name,
		restapi => {
			listen => '127.0.0.1:' . $self->rest_port($i),
			connect_address => '127.0.0.1:' . $self->rest_port($i),
		},
		etcd3 => { hosts => ["127.0.0.1:$self->{base_port}"] },
		bootstrap => {
			dcs => {
				# Patroni's minimums: the leader key lives 20 s.
				ttl => 20,
				loop_wait => 1,
				retry_timeout => 3,
				maximum_lag_on_failover => 16 * 1024 * 1024,
				synchronous_mode => $self->{synchronous_mode} ? JSON::PP::true : JSON::PP::false,
				postgresql => {
					use_pg_rewind => JSON::PP::true,
					use_slots => JSON::PP::true,
					parameters => \%parameters,
				},
			},
			initdb => [ 'data-checksums', { encoding => 'UTF8' }, { locale => 'C' } ],
			pg_hba => [
				'local all all trust',
				'host all all 127.0.0.1/32 trust',
				'host replication all 127.0.0.1/32 trust',
			],
		},
		postgresql => {
			listen => '127.0.0.1:' . $self->pg_port($i),
			connect_address => '127.0.0.1:' . $self->pg_port($i),
			data_dir => $self->data_dir($i),
			bin_dir => $bin_dir,
			pgpass => "$self->{dir}/$name/pgpass",
			# A spread checkpoint would hold a new standby up for seconds.
			basebackup => [ { checkpoint => 'fast' } ],
			authentication => {
				superuser => { username => 'postgres' },
				replication => { username => 'postgres' },
				rewind => { username => 'postgres' },
			},
			parameters => { unix_socket_directories => "$self->{dir}/$name" },
		},
	};
	return JSON::PP->new->canonical->pretty->encode($config);
}

=pod

=head1 $cluster->start_member($i, %env)

Starts member $i's Patroni (which bootstraps, joins or rejoins its
PostgreSQL). %env goes into the environment of that member's PostgreSQL
only (the clock drill's libfaketime), not Patroni's: Patroni's bin_dir is
then a directory of the member's own, where `postgres` is a script that
sets %env and runs the real one, and every other program a symbolic link to
the real one.

=cut

sub start_member
{
	my ($self, $i, %env) = @_;
	my $home = "$self->{dir}/" . $self->member_name($i);
	$self->_mkdir($home) unless -d $home;
	my $bin_dir = $ENV{PG_BIN};
	if (%env)
	{
		$bin_dir = "$home/bin";
		remove_tree($bin_dir);
		$self->_mkdir($bin_dir, 0755);
		opendir my $dh, $ENV{PG_BIN} or croak "$ENV{PG_BIN}: $!";
		for my $program (grep { !/^\./ && $_ ne 'postgres' } readdir $dh)
		{
			symlink "$ENV{PG_BIN}/$program", "$bin_dir/$program" or croak "symlink $program: $!";
		}
		closedir $dh;
		my $assignments = join ' ', map { "$_='$env{$_}'" } sort keys %env;
		$self->_write_file("$bin_dir/postgres",
			"#!/bin/sh\nexport $assignments\nexec '$ENV{PG_BIN}/postgres' \"\$@\"\n");
		chmod 0755, "$bin_dir/postgres";
	}
	$self->_write_file("$home/patroni.yml", $self->_config($i, $bin_dir));
	$self->{patroni}{$i} = $self->_spawn($self->log_file($i), 'patroni', "$home/patroni.yml");
	return;
}

# The environment that sets a PostgreSQL's clock $offset (e.g. '-30s') from
# the machine's, for start_member. CLOCK_MONOTONIC is left alone, as a real
# step of the clock leaves it. Patroni does not get it: with
# FAKETIME_DONT_FAKE_MONOTONIC, libfaketime 0.9.10 shifts the deadline of
# clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) anyway, and every
# time.sleep() of Python 3.11 and later fails with EINVAL (libfaketime issue
# 426; Patroni's main loop died of it now and then); without it, every
# Python lock wait with a timeout lasts the offset longer.
sub faketime_env
{
	my ($offset) = @_;
	return (
		LD_PRELOAD => $FAKETIME_LIBRARY,
		FAKETIME => $offset,
		FAKETIME_DONT_FAKE_MONOTONIC => 1);
}

=pod

=head1 $cluster->stop_member($i)

SIGTERM to Patroni: it stops its PostgreSQL (fast) and gives up the leader
key. Waits for it to exit.

=cut

sub stop_member
{
	my ($self, $i) = @_;
	my $pid = delete $self->{patroni}{$i} or return;
	kill 'TERM', $pid;
	my $deadline = time + 60;
	while (time < $deadline)
	{
		return if waitpid($pid, POSIX::WNOHANG()) == $pid;
		sleep 0.1;
	}
	kill 'KILL', $pid;
	waitpid $pid, 0;
	croak 'Patroni ' . $self->member_name($i) . ' did not stop within 60 s';
}

=pod

=head1 $cluster->kill_node($i)

Member $i's node dies: Patroni, its postmaster and every child of the
postmaster get SIGKILL at once. Returns the time of the kill.

=cut

sub kill_node
{
	my ($self, $i) = @_;
	my $patroni = delete $self->{patroni}{$i};
	my $postmaster = postmaster_pid($self->data_dir($i));
	my @pids = grep { defined } $patroni, $postmaster;
	push @pids, children_of($postmaster) if $postmaster;
	my $at = time;
	kill 'KILL', @pids;
	waitpid $patroni, 0 if $patroni;
	wait_until('the killed processes are gone', 10, sub { !grep { alive($_) } @pids });
	return $at;
}

=pod

=head1 $cluster->kill_node_with_unsent_wal($i, $stall_seconds)

Member $i, the leader, dies with WAL its standby never got: its walsender is
stopped (SIGSTOP) for $stall_seconds while the clients go on committing, then
kill_node($i). Returns the time of the kill.

=cut

sub kill_node_with_unsent_wal
{
	my ($self, $i, $stall_seconds) = @_;
	my ($walsender) = $self->psql($i, 'SELECT pid FROM pg_stat_replication') =~ /^(\d+)$/m;
	ok($walsender, "m$i has a walsender to stall");
	kill 'STOP', $walsender if $walsender;
	sleep $stall_seconds;
	return $self->kill_node($i);
}

sub postmaster_pid
{
	my ($data_dir) = @_;
	open my $fh, '<', "$data_dir/postmaster.pid" or return undef;
	my $pid = <$fh>;
	return undef unless defined $pid && $pid =~ /^(\d+)/;
	return alive($1) ? $1 : undef;
}

sub alive
{
	my ($pid) = @_;
	open my $fh, '<', "/proc/$pid/stat" or return 0;
	my $stat = <$fh>;
	return ($stat // '') !~ /^\d+ \(.*\) Z /s;
}

sub children_of
{
	my ($parent) = @_;
	my @children;
	for my $stat (glob '/proc/[0-9]*/stat')
	{
		open my $fh, '<', $stat or next;
		my $line = <$fh> // next;
		push @children, $1 if $line =~ /^(\d+) \(.*\) \S+ (\d+) /s && $2 == $parent;
	}
	return @children;
}

=pod

=head1 REST API, patronictl and SQL

  $cluster->rest($i, METHOD, PATH, BODY)  => (status, decoded JSON or text)
  $cluster->members                        => the /cluster members, from any live member
  $cluster->leader                         => the index of the member that holds Patroni's
                                              leader lock and whose PostgreSQL has finished
                                              promotion (takes writes), or undef
  $cluster->patronictl($i, ARGS...)        => patronictl's output, with member $i's configuration
  $cluster->psql($i, SQL)                  => psql's output (croaks on an error)

=cut

sub rest
{
	my ($self, $i, $method, $path, $body) = @_;
	my $response = HTTP::Tiny->new(timeout => 30)->request($method,
		'http://127.0.0.1:' . $self->rest_port($i) . $path,
		$body ? { content => encode_json($body), headers => { 'Content-Type' => 'application/json' } } : {});
	my $content = $response->{content} // '';
	my $decoded = eval { decode_json($content) } // $content;
	return ($response->{status}, $decoded);
}

sub members
{
	my ($self) = @_;
	for my $i (sort keys %{ $self->{patroni} })
	{
		my ($status, $cluster) = $self->rest($i, 'GET', '/cluster');
		return @{ $cluster->{members} } if $status == 200 && ref $cluster;
	}
	return ();
}

sub leader
{
	my ($self) = @_;
	my ($leader) = grep { $_->{role} =~ /^(leader|master)$/ && $_->{state} eq 'running' } $self->members;
	return undef unless $leader && $leader->{name} =~ /^m(\d+)$/;
	my $i = $1;
	# Patroni names the lock holder leader, state running, while its
	# PostgreSQL is still a standby being promoted (a restarted leader starts
	# in recovery); until promotion ends it takes no writes.
	my $in_recovery = eval { $self->psql($i, 'SELECT pg_is_in_recovery()') } // '';
	return $in_recovery eq 'f' ? $i : undef;
}

# Whether member $i streams from the leader as its synchronous standby (or,
# without synchronous mode, as a replica), on the leader's timeline.
sub is_streaming
{
	my ($self, $i) = @_;
	my @members = $self->members;
	my ($leader) = grep { $_->{role} =~ /^(leader|master)$/ } @members;
	my ($member) = grep { $_->{name} eq $self->member_name($i) } @members;
	return 0 unless $leader && $member;
	my $role = $self->{synchronous_mode} ? qr/^sync_standby$/ : qr/^(replica|sync_standby)$/;
	return 0 unless $member->{role} =~ $role && ($member->{timeline} // -1) == ($leader->{timeline} // -2);
	# Patroni 3 says 'running', 4 says 'streaming'; ask the server to be sure.
	my $receiving = eval {
		$self->psql($i, "SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'")
	};
	return ($receiving // 0) == 1;
}

sub patronictl
{
	my ($self, $i, @arguments) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'patronictl', '-c', "$self->{dir}/m$i/patroni.yml", @arguments ],
		'<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(60))
	  or croak "patronictl @arguments failed: $out $err";
	return $out;
}

sub psql
{
	my ($self, $i, $sql) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ "$ENV{PG_BIN}/psql", '-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1',
			'-h', '127.0.0.1', '-p', $self->pg_port($i), '-U', 'postgres', '-d', 'postgres', '-c', $sql ],
		'<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(60))
	  or croak "psql on " . $self->member_name($i) . " failed: $err";
	chomp $out;
	return $out;
}

# Polls $condition every 0.2 s for up to $seconds; returns its value, or 0.
sub wait_until
{
	my ($what, $seconds, $condition) = @_;
	my $deadline = time + $seconds;
	while (1)
	{
		my $value = eval { $condition->() };
		return $value if $value;
		if (time > $deadline)
		{
			diag "timed out after $seconds s waiting until $what" . ($@ ? ": $@" : '');
			return 0;
		}
		sleep 0.2;
	}
}

=pod

=head1 Clients

  $cluster->create_ids_table($i)  => the table the clients insert into,
                                     made on member $i (the leader)
  $cluster->start_clients($count, batch => 20, pause => 0.05)
  $cluster->read_batches         => the batches recorded so far, each
  $cluster->stop_clients         => stops them, then read_batches, each
                                     { client, ok, start, end, ids => [...], sqlstate, message }

=cut

sub create_ids_table
{
	my ($self, $i) = @_;
	$self->psql($i, 'CREATE EXTENSION snowflake');
	$self->psql($i, 'CREATE TABLE ids (id bigint PRIMARY KEY DEFAULT snowflake_nextval(),'
		  . ' client int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())');
	return;
}

sub start_clients
{
	my ($self, $count, %options) = @_;
	my $batch = $options{batch} // 20;
	my $pause = $options{pause} // 0.05;
	my $connstr = $self->connstr;
	for my $client (1 .. $count)
	{
		my $record = "$self->{dir}/client$client.ids";
		my $pid = fork // croak "fork: $!";
		if ($pid == 0)
		{
			@clusters = ();    # the parent cleans up, not the clients
			my $stop = 0;
			$SIG{TERM} = sub { $stop = 1 };
			open my $out, '>>', $record or POSIX::_exit(1);
			$out->autoflush(1);
			my $sql = "INSERT INTO ids (client) SELECT $client FROM generate_series(1, $batch) RETURNING id";
			until ($stop)
			{
				my ($stdout, $stderr) = ('', '');
				my $start = time;
				my $ok = eval {
					IPC::Run::run([ "$ENV{PG_BIN}/psql", '-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1',
							'-v', 'VERBOSITY=verbose', '-d', $connstr, '-c', $sql ],
						'<', \undef, '>', \$stdout, '2>', \$stderr, IPC::Run::timeout(30));
				};
				my $end = time;
				my @ids = $stdout =~ /^(\d+)$/mg;
				if ($ok && @ids == $batch)
				{
					print $out join(' ', 'ok', $start, $end, @ids), "\n";
				}
				else
				{
					my ($sqlstate) = $stderr =~ /ERROR:\s+([0-9A-Z]{5}):/;
					(my $message = $stderr || $@ || 'no output') =~ s/\s+/ /g;
					print $out join(' ', 'err', $start, $end, $sqlstate // '-', $message), "\n";
				}
				sleep $pause unless $stop;
			}
			POSIX::_exit(0);
		}
		$self->{clients}{$client} = $pid;
	}
	return;
}

sub stop_clients
{
	my ($self) = @_;
	my @clients = sort keys %{ $self->{clients} };
	for my $client (@clients)
	{
		my $pid = delete $self->{clients}{$client};
		kill 'TERM', $pid;
		waitpid $pid, 0;
	}
	return $self->read_batches;
}

# The batches recorded so far by every client, in the order they started.
sub read_batches
{
	my ($self) = @_;
	my @batches;
	for my $record (glob "$self->{dir}/client*.ids")
	{
		my ($client) = $record =~ /client(\d+)\.ids$/;
		open my $in, '<', $record or next;
		while (my $line = <$in>)
		{
			next unless $line =~ /\n$/;    # a line still being written
			chomp $line;
			my ($kind, $start, $end, @rest) = split / /, $line;
			if ($kind eq 'ok')
			{
				push @batches, { client => $client, ok => 1, start => $start, end => $end, ids => \@rest };
			}
			else
			{
				my $sqlstate = shift @rest;
				push @batches, { client => $client, ok => 0, start => $start, end => $end,
					sqlstate => $sqlstate, message => join(' ', @rest) };
			}
		}
	}
	return sort { $a->{start} <=> $b->{start} } @batches;
}

=pod

=head1 Checks on the recorded batches

  ordering_violations(@batches)  => batches that returned an ID at or below an
                                    ID returned by a batch that had ended
                                    before they started (none on one node;
                                    none across a failover either when the
                                    promoted standby had every ID returned)
  longest_gap(\@batches, $from, $to)
                                 => the longest time between two successful
                                    batches' ends around [$from, $to]: how long
                                    the clients had no ID

=cut

sub ordering_violations
{
	my @batches = grep { $_->{ok} } @_;
	my @by_end = sort { $a->{end} <=> $b->{end} } @batches;
	my ($next, $highest, @violations) = (0, 0);
	for my $batch (sort { $a->{start} <=> $b->{start} } @batches)
	{
		while ($next < @by_end && $by_end[$next]{end} < $batch->{start})
		{
			my $top = (sort { $b <=> $a } @{ $by_end[$next]{ids} })[0];
			$highest = $top if $top > $highest;
			$next++;
		}
		my $lowest = (sort { $a <=> $b } @{ $batch->{ids} })[0];
		push @violations, $batch if $lowest <= $highest;
	}
	return @violations;
}

sub longest_gap
{
	my ($batches, $from, $to) = @_;
	my @ends = sort { $a <=> $b } map { $_->{end} } grep { $_->{ok} } @$batches;
	my ($previous) = reverse grep { $_ <= $from } @ends;
	$previous //= $from;
	my $longest = 0;
	for my $end (grep { $_ > $from } @ends)
	{
		$longest = $end - $previous if $end - $previous > $longest;
		$previous = $end;
		last if $end > $to;
	}
	return $longest;
}

sub fail_with_logs
{
	my ($self, $message) = @_;
	$self->{failed} = 1;
	die "$message\n";    # cleanup() prints the logs' tails
}

# Kills by recorded PID: clients, Patroni, every postmaster (with its
# children) found in a data directory, etcd. Prints the logs' tails if the
# drill failed, then removes the directory.
sub cleanup
{
	my ($self) = @_;
	kill 'KILL', values %{ $self->{clients} };
	waitpid $_, 0 for values %{ $self->{clients} };
	my @patroni = values %{ $self->{patroni} };
	kill 'KILL', @patroni;
	waitpid $_, 0 for @patroni;
	for my $i (0 .. $self->{members} - 1)
	{
		my $postmaster = postmaster_pid($self->data_dir($i)) or next;
		my @children = children_of($postmaster);
		kill 'KILL', $postmaster, @children;
	}
	if ($self->{etcd})
	{
		kill 'KILL', $self->{etcd};
		waitpid $self->{etcd}, 0;
	}
	# The postmasters are not our children: wait for them to be gone.
	wait_until('every postmaster is gone', 10, sub {
		!grep { postmaster_pid($self->data_dir($_)) } 0 .. $self->{members} - 1;
	});
	my $failed = $self->{failed} || !Test::More->builder->is_passing;
	if ($failed)
	{
		for my $log (glob("$self->{dir}/*.log"))
		{
			diag "--- tail of $log ---";
			diag `tail -n 40 '$log'`;
		}
	}
	if ($ENV{SNOWFLAKE_HA_KEEP})
	{
		diag "kept $self->{dir} (SNOWFLAKE_HA_KEEP)";
	}
	else
	{
		remove_tree($self->{dir});
	}
	return;
}

$SIG{INT} = $SIG{TERM} = sub { die "interrupted by signal\n" };

END
{
	if ($$ == $parent_pid)
	{
		my $status = $?;
		$_->cleanup for @clusters;
		@clusters = ();
		$? = $status;
	}
}

1;
