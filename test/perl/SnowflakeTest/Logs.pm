# What a test reads of a node besides SQL: its server log, and the
# snowflake.so its processes mapped.
package SnowflakeTest::Logs;

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;

=pod

=head1 NAME

SnowflakeTest::Logs - server logs and mapped libraries in snowflake's cluster tests

=head1 FUNCTIONS

=over

=item mapped_library($node, $first, $pid) => $paths

The snowflake.so files a process of the node has mapped (its
F</proc/PID/maps>, read by the server), sorted, joined by spaces: the
session's own backend after running the SQL C<$first> in it (its output
dropped), or, given C<$pid>, that process (a background worker's).

=item log_tail($node, $lines) => $text

The last C<$lines> (default 40) lines of the node's server log. At exit, if
any test failed or the script died, the tail of the log of every node
SnowflakeTest::Nodes made or remembered is printed with diag.


=item snowflake_log_lines($node) => $text

The lines of the node's server log that speak of snowflake (paths aside: a
test's directory is named after it), but for the registration of its WAL
resource manager, which every start logs, and the statements the framework
logs: empty for a node that started, ran and stopped without a word from
snowflake.

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

sub snowflake_log_lines
{
	my ($node) = @_;
	return join "\n", grep {
		(my $words = $_) =~ s{/\S+}{}g;
		$words =~ /snowflake/i
		  && $words !~ / statement: /
		  && $words !~ /registered custom resource manager "snowflake"/
	} split /\n/, slurp_file($node->logfile);
}

1;
