# The processes of a node, read from /proc: its postmaster (from
# postmaster.pid), the postmaster's children, and whether a process is alive
# or a zombie. For SnowflakeTest::Nodes (crash_node, snapshot_node) and
# SnowflakeTest::Clock; the campaign reads them too (through SnowflakeTest).
package SnowflakeTest::Processes;

use strict;
use warnings FATAL => 'all';

use Carp;
use PostgreSQL::Test::Utils;

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

1;
