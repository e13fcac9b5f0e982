#!/usr/bin/env perl
# The install script's lists and refusals, run by scripts/test.sh: each
# layer of scripts/test.sh has its list of packages, and one layer asks for
# no other layer's; a PostgreSQL major it knows no clang for is refused
# before anything is installed, a major this machine's apt sources do not
# serve (PG_MAJOR=17 on bookworm) is named as such, with what to do, and so
# is PostgreSQL 19 where Debian's experimental archive cannot serve it (any
# release but forky and sid); in each case nothing is installed. And on forky
# and sid, where apt's sources name experimental already (as Debian's
# instructions for 19 have users do), the script still prefers experimental
# for PostgreSQL 19's packages, libpq included.
use strict;
use warnings;
use Test::More;

# Runs scripts/install-deps.sh with PG_MAJOR=$major (and no PG_CONFIG, which
# would win); returns its exit status and what it printed.
sub install_deps
{
	my ($major, @arguments) = @_;
	local $ENV{PG_MAJOR} = $major;
	local $ENV{PG_CONFIG} = '';
	my $output = qx{scripts/install-deps.sh @arguments 2>&1};
	return ($? >> 8, $output);
}

sub installed
{
	my ($package) = @_;
	my $status = qx{dpkg-query -W -f='\${Status}' $package 2>/dev/null};
	return $status =~ /install ok installed/;
}

# The packages of each layer of scripts/test.sh (--print installs nothing):
# every layer it runs has its list, and one layer asks for its own packages
# and the runtime set, not those of every layer.
my ($all_layers) = do { local (@ARGV, $/) = 'scripts/test.sh'; <> } =~ /^ALL_LAYERS=\(([^)]*)\)$/m;
my @layers = split ' ', $all_layers;
ok(@layers > 10, "scripts/test.sh's ALL_LAYERS read (@layers)");
for my $layer (@layers)
{
	my $printed = qx{scripts/install-deps.sh --print --layers $layer 2>&1};
	is($? >> 8, 0, "--layers $layer: a list") or diag $printed;
}
my %tap = map { $_ => 1 } split /\n/, qx{scripts/install-deps.sh --print --layers tap};
my %runtime = map { $_ => 1 } split /\n/, qx{scripts/install-deps.sh --print --runtime};
ok($tap{libfaketime} && $tap{pgbackrest}, '--layers tap: libfaketime and pgbackrest');
ok(!(grep { !$tap{$_} } keys %runtime), '--layers tap: and the runtime set');
ok(!$tap{patroni} && !$tap{spin} && !$tap{sqlsmith}, '--layers tap: not the packages of ha, model or sqlsmith');
my %every = map { $_ => 1 } split /\n/, qx{scripts/install-deps.sh --print};
ok(!(grep { !$every{$_} } keys %tap), 'every package of --layers tap is in the whole list');
my $refused = qx{scripts/install-deps.sh --print --layers tap nope 2>&1};
is($? >> 8, 2, '--layers with a name that is no layer: refused');
like($refused, qr/no layer 'nope'/, 'saying which');

my ($status, $output) = install_deps(16, '--runtime');
is($status, 1, 'PG_MAJOR=16: refused');
like($output, qr/knows no clang for PostgreSQL 16 \(15, 17, 18 and 19 are supported\)/,
	'PG_MAJOR=16: the message names the supported majors');
unlike($output, qr/^Installing/m, 'PG_MAJOR=16: nothing is installed');

# A supported major that this release does not serve: any of the three that
# apt knows no package of (with PostgreSQL's own apt repository configured,
# apt knows them all, and there is nothing to check).
my ($unserved) = grep { system("apt-cache show postgresql-$_ >/dev/null 2>&1") != 0 } (15, 17, 18);
SKIP:
{
	skip 'these apt sources serve every supported major', 4 unless $unserved;
	($status, $output) = install_deps($unserved, '--runtime');
	is($status, 1, "PG_MAJOR=$unserved, which these sources do not serve: refused");
	like($output, qr/serve no postgresql-$unserved\b/, 'the message names the missing package');
	like($output, qr/unset PG_MAJOR to use this release's major/, 'and says what to do');
	ok(!installed("postgresql-$unserved"), "postgresql-$unserved was not installed");
}

# 19 comes from experimental, built for forky and sid only: elsewhere it is
# refused, saying where it can be had.
my ($codename) = qx{. /etc/os-release && echo "\$VERSION_CODENAME"} =~ /(\S+)/;
SKIP:
{
	skip "experimental serves PostgreSQL 19 on $codename", 7 if $codename =~ /^(forky|sid)$/;
	skip 'these apt sources serve PostgreSQL 19', 7
	  if system('apt-cache show postgresql-19 >/dev/null 2>&1') == 0;
	($status, $output) = install_deps(19, '--runtime');
	is($status, 1, "PG_MAJOR=19 on $codename: refused");
	like($output, qr/experimental archive, which is built for forky and sid/, 'the message says why');
	like($output, qr/scripts\/fresh-root\.sh forky -- 'PG_MAJOR=19 scripts\/test\.sh'/, 'and what to do');
	ok(!installed('postgresql-19'), 'postgresql-19 was not installed');

	# --sources, which a server that installs the package runs, refuses alike.
	($status, $output) = install_deps(19, '--sources');
	is($status, 1, "PG_MAJOR=19 --sources on $codename: refused");
	like($output, qr/experimental archive, which is built for forky and sid/, 'the message says why');
	ok(!-e '/etc/apt/sources.list.d/snowflake-experimental.list', 'no apt source was added');
}

# Experimental added by the user, not by the script: --sources (as the tour's
# install does before installing) must still prefer it for postgresql-19's
# packages, or apt keeps this release's libpq-dev, which
# postgresql-server-dev-19 refuses. Runs where the machine has no
# experimental source yet, and leaves none behind.
my $preferences = '/etc/apt/preferences.d/snowflake-experimental';
SKIP:
{
	skip "experimental serves forky and sid only; this is $codename", 5 unless $codename =~ /^(forky|sid)$/;
	skip 'changing apt sources needs root', 5 if $> != 0;
	skip "apt's sources name experimental already", 5
	  if system(q{grep -rqs '[[:space:]]experimental\b' /etc/apt/sources.list /etc/apt/sources.list.d/}) == 0;
	skip "$preferences is there already", 5 if -e $preferences;
	my ($mirror) = qx{apt-get indextargets --format '\$(REPO_URI)' 'Origin: Debian' 'Codename: $codename'} =~ /(\S+)/;
	my $users = '/etc/apt/sources.list.d/users-experimental.list';
	open(my $fh, '>', $users) or die "$users: $!";
	print $fh "deb $mirror experimental main\n";
	close($fh);
	system('apt-get update -qq') == 0 or die 'apt-get update failed';
	($status, $output) = install_deps(19, '--sources');
	is($status, 0, 'PG_MAJOR=19 --sources with experimental already in the sources: done');
	ok(!-e '/etc/apt/sources.list.d/snowflake-experimental.list', 'no second source was added');
	ok(-e $preferences, 'experimental is preferred for postgresql-19');
	my ($candidate) = qx{apt-cache policy libpq-dev} =~ /Candidate: (\S+)/;
	like($candidate, qr/^19~/, "so libpq-dev comes from experimental ($candidate)");
	($status, $output) = install_deps(19, '--sources');
	unlike($output, qr/Preferring/, 'a second run changes nothing');
	unlink($users, $preferences);
}

done_testing();
