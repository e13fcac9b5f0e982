# The wall clock of a node's server processes, stepped by a test
# (libfaketime): only the server processes of a node made with faketime => 1
# see the offset, which a file the test rewrites holds; CLOCK_MONOTONIC is
# never faked, so waits measured on it stay real.
package SnowflakeTest::Clock;

use strict;
use warnings FATAL => 'all';

use Carp;
use Test::More;
use Time::HiRes qw(time usleep);
use SnowflakeTest::Processes;

our $FAKETIME_LIBRARY =
  $ENV{SNOWFLAKE_FAKETIME_LIBRARY}
  // '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

=pod

=head1 NAME

SnowflakeTest::Clock - a node's wall clock, stepped by the test (libfaketime)

=head1 FUNCTIONS

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
	my $postmaster = SnowflakeTest::Processes::_postmaster_pid($node);
	return undef unless $postmaster && SnowflakeTest::Processes::_alive($postmaster);
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

=pod

=back

=cut

1;
