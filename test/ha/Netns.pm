# A small network of Linux network namespaces for the partition drills
# (test/ha/2NN_partition_*.t, 3NN_pgbouncer_*.t), and its cleanup.
#
# Each host is a namespace of its own with one interface, eth0, whose other
# end is a port of a bridge in a "switch" namespace; addresses live only
# inside the namespaces (10.231.0.0/24), never on this machine's interfaces,
# and the interfaces are made directly inside the namespaces, so no name is
# ever taken on the host. Every namespace is named sfha-PID-ROLE, PID being
# this test's: two drills running at once never meet.
#
# A cut is the switch port of a host taken down: the host's packets vanish
# (the veth drops them, no error comes back) and its TCP connections hang,
# which is how networks fail. For that to hold for new connections too, every
# host knows every other host's MAC address permanently: no ARP request goes
# unanswered, so the kernel never reports "no route to host", the SYN simply
# gets no answer.
#
# Cleanup. Every namespace made here is removed at exit, whether the test
# passed, died or was interrupted (INT, TERM, HUP and the drill's own alarm
# end the process through exit, so END runs): first the processes inside it
# (listed by `ip netns pids`, so only ours), TERM then KILL, then the
# namespace. Servers are stopped properly before that by their owners
# (NetnsPostgres), whose END blocks run first.
package Netns;

use strict;
use warnings FATAL => 'all';

use Carp;
use Time::HiRes qw(time usleep);

my @labs;    # every lab made, for cleanup at exit

# Ends the process through exit on the usual signals, so that END blocks
# clean up; and bounds the whole drill with an alarm.
sub guard_process
{
	my ($seconds) = @_;
	for my $signal (qw(INT TERM HUP))
	{
		$SIG{$signal} = sub { print STDERR "# caught SIG$signal, cleaning up\n"; exit 1; };
	}
	$SIG{ALRM} = sub {
		print STDERR "# the drill ran past its bound of $seconds s, cleaning up\n";
		exit 1;
	};
	alarm $seconds;
	return;
}

# Runs a command, dies with its output if it fails.
sub run
{
	my @command = @_;
	my $output = `@{[ map { _quote($_) } @command ]} 2>&1`;
	croak "failed (exit " . ($? >> 8) . "): @command\n$output" if $? != 0;
	return $output;
}

sub _quote
{
	my ($word) = @_;
	return $word if $word =~ m{^[\w./:=@%+,-]+$};
	$word =~ s/'/'\\''/g;
	return "'$word'";
}

=pod

=head1 Netns->new() => $lab

Makes the switch namespace (a bridge, br0) of a new lab.

=cut

sub new
{
	my ($class) = @_;
	my $self = bless {
		id => "sfha-$$",
		hosts => {},      # role => { namespace, address, mac }
		namespaces => [],
	}, $class;
	push @labs, $self;
	$self->{switch} = $self->_namespace('sw');
	$self->ip($self->{switch}, qw(link add br0 type bridge));
	$self->ip($self->{switch}, qw(link set br0 up));
	return $self;
}

sub _namespace
{
	my ($self, $role) = @_;
	my $name = "$self->{id}-$role";
	run('ip', 'netns', 'add', $name);
	push @{ $self->{namespaces} }, $name;
	$self->ip($name, qw(link set lo up));
	return $name;
}

# `ip` inside a namespace.
sub ip
{
	my ($self, $namespace, @arguments) = @_;
	return run('ip', '-n', $namespace, @arguments);
}

=pod

=head1 $lab->add_host($role, $last_octet) => $namespace

A namespace sfha-PID-ROLE plugged into the switch, with address
10.231.0.LAST_OCTET/24 on eth0 (the bridge port is p-ROLE). Without
C<$last_octet>, a namespace with only its loopback (for a host that needs no
network but its own, as pgbouncer's drill).

=cut

sub add_host
{
	my ($self, $role, $last_octet) = @_;
	croak "role $role: at most 10 characters, letters and digits"
	  unless $role =~ /^[a-z0-9]{1,10}$/;
	croak "host $role exists" if $self->{hosts}{$role};
	my $namespace = $self->_namespace($role);
	$self->{hosts}{$role} = { namespace => $namespace };
	return $namespace unless defined $last_octet;

	my $address = "10.231.0.$last_octet";
	my $mac = sprintf('02:00:0a:e7:00:%02x', $last_octet);
	run('ip', 'link', 'add', 'name', 'eth0', 'address', $mac, 'netns', $namespace,
		'type', 'veth', 'peer', 'name', "p-$role", 'netns', $self->{switch});
	$self->ip($self->{switch}, 'link', 'set', "p-$role", 'master', 'br0');
	$self->ip($self->{switch}, 'link', 'set', "p-$role", 'up');
	$self->ip($namespace, 'addr', 'add', "$address/24", 'dev', 'eth0');
	$self->ip($namespace, qw(link set eth0 up));
	$self->{hosts}{$role}{address} = $address;
	$self->{hosts}{$role}{mac} = $mac;

	# Permanent neighbours both ways with every host already there.
	for my $other (values %{ $self->{hosts} })
	{
		next if !$other->{address} || $other->{address} eq $address;
		$self->ip($namespace, 'neigh', 'replace', $other->{address}, 'lladdr',
			$other->{mac}, 'dev', 'eth0', 'nud', 'permanent');
		$self->ip($other->{namespace}, 'neigh', 'replace', $address, 'lladdr',
			$mac, 'dev', 'eth0', 'nud', 'permanent');
	}
	return $namespace;
}

sub namespace { my ($self, $role) = @_; return $self->_host($role)->{namespace}; }
sub address   { my ($self, $role) = @_; return $self->_host($role)->{address}; }

sub _host
{
	my ($self, $role) = @_;
	return $self->{hosts}{$role} // croak "no host $role in this lab";
}

=pod

=head1 $lab->cut($role) / $lab->heal($role)

Takes the host's switch port down (its packets vanish from then on) / up
again.

=cut

sub cut
{
	my ($self, $role) = @_;
	$self->_host($role);
	$self->ip($self->{switch}, 'link', 'set', "p-$role", 'down');
	return;
}

sub heal
{
	my ($self, $role) = @_;
	$self->_host($role);
	$self->ip($self->{switch}, 'link', 'set', "p-$role", 'up');
	return;
}

=pod

=head1 $lab->command($role, @command) => @argv

The command line that runs C<@command> inside the host's namespace.

=cut

sub command
{
	my ($self, $role, @command) = @_;
	return ('ip', 'netns', 'exec', $self->namespace($role), @command);
}

# The pids of the processes inside a namespace.
sub _pids
{
	my ($namespace) = @_;
	my $output = `ip netns pids $namespace 2>/dev/null`;
	return grep { /^\d+$/ && $_ != $$ } split /\s+/, $output;
}

=pod

=head1 $lab->destroy

Ends every process inside the lab's namespaces and removes them. Called at
exit; safe to call twice.

=cut

sub destroy
{
	my ($self) = @_;
	my @namespaces = reverse @{ $self->{namespaces} };
	for my $namespace (@namespaces)
	{
		my @pids = _pids($namespace);
		next unless @pids;
		print STDERR "# ending processes left in $namespace: @pids\n";
		kill 'CONT', @pids;
		kill 'TERM', @pids;
		my $deadline = time + 5;
		usleep(100_000) while time < $deadline && _pids($namespace);
		kill 'KILL', _pids($namespace);
	}
	for my $namespace (@namespaces)
	{
		my $deadline = time + 5;
		usleep(100_000) while time < $deadline && _pids($namespace);
		system('ip', 'netns', 'del', $namespace) == 0
		  or print STDERR "# could not remove network namespace $namespace\n";
	}
	$self->{namespaces} = [];
	return;
}

END
{
	my $exit = $?;
	$_->destroy for @labs;
	$? = $exit;
}

1;
