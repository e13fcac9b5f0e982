# The error a psql run reported, read from its stderr: the one parser of
# psql's verbose error text (\set VERBOSITY verbose) for every test layer that
# runs psql itself (SnowflakeTest for the cluster tests, NetnsPostgres for the
# high-availability drills). No dependency beyond Perl, so any layer can load
# it.
package PsqlError;

use strict;
use warnings FATAL => 'all';

# Sets sqlstate, message, detail and hint in %$result from $result->{stderr},
# from the first ERROR, FATAL or PANIC in it; leaves them unset when there is
# none.
sub parse
{
	my ($result) = @_;
	return
	  unless $result->{stderr} =~ /(?:ERROR|FATAL|PANIC):\s+([0-9A-Z]{5}):\s+(.*)/;
	$result->{sqlstate} = $1;
	$result->{message} = $2;
	my $rest = substr($result->{stderr}, $+[0]);
	$result->{detail} = $1 if $rest =~ /^DETAIL:\s+(.*)$/m;
	$result->{hint} = $1 if $rest =~ /^HINT:\s+(.*)$/m;
	return;
}

1;
