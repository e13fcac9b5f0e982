# PostgreSQL servers inside the namespaces of a Netns lab, for the partition
# and pgbouncer drills (test/ha). The drills run as root; each server runs as
# the postgres user (`ip netns exec NS runuser -u postgres -- pg_ctl ...`),
# in a temporary directory of its own, from $PG_BIN (scripts/test.sh sets it).
#
# The test talks to every server through its Unix socket, which crosses
# network namespaces: it can read a node's state and issue IDs on it while
# the node's network is cut. Only the servers' TCP traffic (a node's registry
# worker to the registry, pgbouncer to its node) goes through the lab.
#
# Cleanup. At exit (END, before Netns removes the namespaces), a failing
# test first gets the tail of every server log as diagnostics; then every
# server still running is woken (SIGCONT, in case a drill froze it) and
# stopped in immediate mode, and the temporary directory is removed.
package NetnsPostgres;

use strict;
use warnings FATAL => 'all';

use Carp;
use File::Temp qw(tempdir);
use IPC::Run;
use Netns;
use PsqlError;
use Test::More;
use Time::HiRes qw(time usleep);

my $PG_BIN = $ENV{PG_BIN} // croak 'PG_BIN is not set (scripts/test.sh ha sets it)';
my $base;       # the temporary directory of every server of this test
my @servers;    # for cleanup at exit

# A directory the postgres user owns, under parents it can enter.
sub base_directory
{
	return $base if $base;
	$base = tempdir('sfha-XXXXXX', TMPDIR => 1, CLEANUP => 0);
	chmod 0755, $base;
	Netns::run('chown', 'postgres:', $base);
	return $base;
}

# A command run as postgres (in the host's namespace unless wrapped).
sub as_postgres { return ('runuser', '-u', 'postgres', '--', @_); }

=pod

=head1 NetnsPostgres->new(%options) => $server

Runs initdb for a server (not started). Options:

  lab, role   the Netns lab and the host (namespace) it runs in
  name        its name (the directory), default the role
  port        its port (57000-57999: the range of these drills)
  listen      listen_addresses, default the host's address ('' for Unix socket only)
  conf        array ref of postgresql.conf lines
  hba         array ref of pg_hba.conf lines, added before the defaults

=cut

sub new
{
	my ($class, %options) = @_;
	my $name = $options{name} // $options{role};
	my $dir = base_directory() . "/$name";
	my $self = bless {
		lab => $options{lab},
		role => $options{role},
		name => $name,
		port => $options{port} // croak('port is required'),
		dir => $dir,
		data => "$dir/data",
		log => "$dir/server.log",
	}, $class;
	mkdir $dir or croak "mkdir $dir: $!";
	Netns::run('chown', 'postgres:', $dir);
	Netns::run(as_postgres("$PG_BIN/initdb", '-D', $self->{data}, '-A', 'trust',
		'-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C'));
	my $listen = $options{listen} // ($self->{lab}->address($self->{role}) // '');
	$self->append_conf(
		"listen_addresses = '$listen'",
		"port = $self->{port}",
		"unix_socket_directories = '$dir'",
		'fsync = off',
		'shared_buffers = 16MB',
		'max_connections = 30',
		"log_line_prefix = '%m [%p] '",
		@{ $options{conf} // [] });
	open my $hba, '>', "$self->{data}/pg_hba.conf" or croak "pg_hba.conf: $!";
	print $hba join("\n",
		@{ $options{hba} // [] },
		'local all all trust',
		'host all all 127.0.0.1/32 trust',
		'host all all 10.231.0.0/24 trust', '');
	close $hba;
	push @servers, $self;
	return $self;
}

=pod

=head1 NetnsPostgres->client($name, $socket_dir, $port) => $client

An object with the SQL methods below for another server that speaks the
protocol on a Unix socket (pgbouncer); it is neither started nor stopped here.

=cut

sub client
{
	my ($class, $name, $socket_dir, $port) = @_;
	return bless { name => $name, dir => $socket_dir, port => $port }, $class;
}

sub append_conf
{
	my ($self, @lines) = @_;
	open my $conf, '>>', "$self->{data}/postgresql.conf" or croak "postgresql.conf: $!";
	print $conf join("\n", @lines, '');
	close $conf;
	return;
}

sub name { return $_[0]->{name}; }
sub port { return $_[0]->{port}; }
sub socket_dir { return $_[0]->{dir}; }
sub logfile { return $_[0]->{log}; }

sub start
{
	my ($self) = @_;
	Netns::run($self->{lab}->command($self->{role},
		as_postgres("$PG_BIN/pg_ctl", '-D', $self->{data}, '-l', $self->{log},
			'-w', '-t', '60', 'start')));
	$self->{running} = 1;
	return;
}

sub stop
{
	my ($self, $mode) = @_;
	return unless $self->{running};
	$self->thaw;
	Netns::run(as_postgres("$PG_BIN/pg_ctl", '-D', $self->{data}, '-m', $mode // 'fast',
		'-w', '-t', '30', 'stop'));
	$self->{running} = 0;
	return;
}

=pod

=head1 SQL

C<< $server->psql($sql, %options) >> runs C<$sql> and returns its output
(unaligned, tuples only), dying on an error. C<< try_psql >> returns a hash
instead: ok, stdout, stderr, sqlstate, message, detail, hint (errors in
verbose form). C<< start_psql >> / C<< finish_psql >> do the same in the
background. Option C<dbname> (default postgres).

=cut

sub _psql_argv
{
	my ($self, %options) = @_;
	return as_postgres("$PG_BIN/psql", '-XAtq', '-v', 'ON_ERROR_STOP=1',
		'-h', $self->{dir}, '-p', $self->{port}, '-d', $options{dbname} // 'postgres');
}

my $session_count = 0;

# Files, not pipes: a session started in the background runs on its own,
# without this process pumping its input and output.
sub start_psql
{
	my ($self, $sql, %options) = @_;
	my $file = sprintf('%s/session-%03d', base_directory(), ++$session_count);
	open my $fh, '>', "$file.sql" or croak "$file.sql: $!";
	print $fh "\\set VERBOSITY verbose\n$sql\n";
	close $fh;
	chmod 0644, "$file.sql";
	my %handle = (file => $file, started => time);
	$handle{run} = IPC::Run::start([ $self->_psql_argv(%options), '-f', "$file.sql" ],
		'<', '/dev/null', '>', "$file.out", '2>', "$file.err",
		IPC::Run::timeout($options{timeout} // 120));
	return \%handle;
}

sub _slurp
{
	my ($file) = @_;
	open my $fh, '<', $file or return '';
	local $/;
	my $text = <$fh>;
	close $fh;
	return $text // '';
}

sub finish_psql
{
	my ($handle) = @_;
	eval { $handle->{run}->finish; 1 } or do {
		my $error = $@;
		$handle->{run}->kill_kill;
		croak "psql did not end: $error\nstderr: " . _slurp("$handle->{file}.err");
	};
	my %result = (
		ok => $? == 0 ? 1 : 0,
		stdout => _slurp("$handle->{file}.out"),
		stderr => _slurp("$handle->{file}.err"),
		elapsed => time - $handle->{started});
	chomp $result{stdout};
	PsqlError::parse(\%result);
	return \%result;
}

sub try_psql
{
	my ($self, $sql, %options) = @_;
	return finish_psql($self->start_psql($sql, %options));
}

sub psql
{
	my ($self, $sql, %options) = @_;
	my $result = $self->try_psql($sql, %options);
	croak "psql on $self->{name} failed: $result->{stderr}\nSQL: $sql" unless $result->{ok};
	return $result->{stdout};
}

# Runs $sql until it returns 't' (at most $seconds); true if it did.
sub poll
{
	my ($self, $sql, $seconds, %options) = @_;
	my $deadline = time + ($seconds // 30);
	while (time < $deadline)
	{
		my $result = $self->try_psql($sql, %options);
		return 1 if $result->{ok} && $result->{stdout} eq 't';
		usleep(50_000);
	}
	return 0;
}

=pod

=head1 Processes

C<< $server->freeze >> stops the postmaster and every process it has forked
with SIGSTOP (a server that no longer answers, its sockets still open);
C<< thaw >> resumes them.

=cut

sub postmaster_pid
{
	my ($self) = @_;
	open my $fh, '<', "$self->{data}/postmaster.pid" or return undef;
	my $pid = <$fh>;
	close $fh;
	chomp $pid;
	return $pid;
}

sub _children
{
	my ($parent) = @_;
	my @children;
	opendir my $dh, '/proc' or croak "/proc: $!";
	for my $pid (grep { /^\d+$/ } readdir $dh)
	{
		open my $fh, '<', "/proc/$pid/stat" or next;
		my $stat = <$fh>;
		close $fh;
		push @children, $pid if $stat && $stat =~ /\)\s+\S\s+(\d+)/ && $1 == $parent;
	}
	closedir $dh;
	return @children;
}

sub freeze
{
	my ($self) = @_;
	my $postmaster = $self->postmaster_pid // croak "$self->{name} is not running";
	kill 'STOP', $postmaster;    # first: it forks nothing new while stopped
	my @children = _children($postmaster);
	kill 'STOP', @children;
	$self->{frozen} = [ $postmaster, @children ];
	return scalar @{ $self->{frozen} };
}

sub thaw
{
	my ($self) = @_;
	kill 'CONT', @{ $self->{frozen} } if $self->{frozen};
	$self->{frozen} = undef;
	return;
}

sub log_tail
{
	my ($self, $lines) = @_;
	open my $fh, '<', $self->{log} or return '';
	my @all = <$fh>;
	close $fh;
	splice(@all, 0, @all - $lines) if @all > $lines;
	return join('', @all);
}

END
{
	my $exit = $?;
	if ($exit != 0 || !Test::More->builder->is_passing)
	{
		for my $server (@servers)
		{
			diag "--- tail of the log of $server->{name} ($server->{log}) ---\n"
			  . $server->log_tail(30);
		}
	}
	for my $server (@servers)
	{
		next unless $server->{running};
		$server->thaw;
		system("runuser -u postgres -- $PG_BIN/pg_ctl -D $server->{data} -m immediate -w -t 20 stop >/dev/null 2>&1");
	}
	system('rm', '-rf', '--one-file-system', $base) if $base;
	$? = $exit;
}

1;
