#!/usr/bin/env perl
# Packaging checks, run by scripts/test.sh: META.json is valid PGXN metadata
# (meta-spec 1.0.0: required keys, semantic versions, a provided file that
# exists) and names the PostgreSQL majors the install script installs; one
# version number in snowflake.control, META.json, debian/changelog and
# CHANGELOG.md; every install and update script has its \echo guard, the
# default version has a whole install script (which META.json provides),
# the only other install script is 1.0's, and the update scripts lead from
# 1.0 to the default version; the pg_upgradecluster
# hook is installed by debian/rules where test/upgrade runs it, under a name
# run-parts runs, and stays out of upgrades into another major.
use strict;
use warnings;
use File::Spec;
use File::Temp qw(tempdir);
use JSON::PP;
use Test::More;

my $meta = decode_json(do { local (@ARGV, $/) = 'META.json'; <> });
my ($control) = do { local (@ARGV, $/) = 'snowflake.control'; <> };
my ($default) = $control =~ /^default_version = '([^']+)'/m;
my $semver = qr/^\d+\.\d+\.\d+$/;

for my $key (qw(name abstract version maintainer license provides meta-spec)) {
    ok(exists $meta->{$key}, "META.json has '$key'");
}
is($meta->{'meta-spec'}{version}, '1.0.0', 'meta-spec 1.0.0');
like($meta->{version}, $semver, 'the distribution version is semantic');
is($meta->{version}, "$default.0", 'META.json version matches default_version in snowflake.control');
while (my ($name, $extension) = each %{ $meta->{provides} }) {
    like($extension->{version}, $semver, "$name: semantic version");
    is($extension->{version}, "$default.0", "$name: version matches the control file");
    ok(-f $extension->{file}, "$name: $extension->{file} exists");
    ok(-f $extension->{docfile}, "$name: $extension->{docfile} exists") if $extension->{docfile};
}
like($meta->{license}, qr/^(postgresql|mit|bsd|apache_2_0|gpl_3)$/, 'license is a PGXN license name');
like($meta->{release_status}, qr/^(stable|testing|unstable)$/, 'release_status is one PGXN knows')
  if exists $meta->{release_status};
for my $phase (keys %{ $meta->{prereqs} // {} }) {
    like($phase, qr/^(configure|build|runtime|test|develop)$/, "prereqs phase '$phase' is one PGXN knows");
    for my $relation (keys %{ $meta->{prereqs}{$phase} }) {
        like($relation, qr/^(requires|recommends|suggests|conflicts)$/,
            "prereqs $phase relation '$relation' is one PGXN knows");
    }
}

# The PostgreSQL majors META.json names (x_supported_postgresql, and its
# description) are those scripts/install-deps.sh installs.
my $install_deps = do { local (@ARGV, $/) = 'scripts/install-deps.sh'; <> };
my ($table) = $install_deps =~ /^case \$PG_MAJOR in\n(.*?)^esac$/ms;
my @installed = $table =~ /^\s+(\d+)\) llvm=/mg;
is_deeply($meta->{x_supported_postgresql}, \@installed,
    "META.json's x_supported_postgresql are the majors install-deps.sh installs (@installed)");
my $named = join(', ', @installed[0 .. $#installed - 1]) . " and $installed[-1]";
like($meta->{description}, qr/\bPostgreSQL \Q$named\E\./, "META.json's description names them");

# One version everywhere: the Debian package's upstream part, and a section of
# the changelog.
my ($debian) = do { local (@ARGV, $/) = 'debian/changelog'; <> } =~ /^snowflake \(([^)]+)\)/;
like($debian, qr/^\Q$default\E\.0-\d+$/, "debian/changelog's version ($debian) is $default.0-N");
my $changelog = do { local (@ARGV, $/) = 'CHANGELOG.md'; <> };
like($changelog, qr/^## \[\Q$default\E\.0\] - \d{4}-\d\d-\d\d$/m, "CHANGELOG.md has a section for $default.0");
ok(-f 'LICENSE', 'the LICENSE file exists');

# The scripts (CONTRIBUTING, "A new version of the extension"). CREATE
# EXTENSION runs the default version's whole script; an earlier version is
# installed by 1.0's and the update scripts, which also bring every earlier
# installation to the default version. sql/upgrade.sql checks that all these
# ways give the same catalog, so no other install script is kept: one would be
# installed by CREATE EXTENSION ... VERSION and tested by nothing.
my @scripts = glob('sql/snowflake--*.sql');
my (%step, @installs);
for my $script (@scripts) {
    my $text = do { local (@ARGV, $/) = $script; <> };
    my $guard;
    my ($name) = $script =~ m{([^/]+)$};
    if ($name =~ /^snowflake--([\d.]+)--([\d.]+)\.sql$/) {
        $step{$1} = $2;
        $guard = qq{ALTER EXTENSION snowflake UPDATE TO '$2'};
    } elsif ($name =~ /^snowflake--([\d.]+)\.sql$/) {
        push @installs, $1;
        $guard = 'CREATE EXTENSION snowflake';
    } else {
        fail("$script is named neither for a version (snowflake--1.8.sql) nor for an update (snowflake--1.7--1.8.sql)");
        next;
    }
    like($text, qr/^\\echo Use "\Q$guard\E" to load this file\. \\quit$/m,
        "$script has the \\echo guard ($guard)");
}
my $whole = "sql/snowflake--$default.sql";
ok(-f $whole, "the default version, $default, has a whole install script ($whole)");
is_deeply([sort @installs], [sort('1.0', $default)],
    "the install scripts are 1.0's and the default version's ($default) only");
my $whole_text = -f $whole ? do { local (@ARGV, $/) = $whole; <> } : '';
unlike($whole_text, qr/\bCREATE\s+OR\s+REPLACE\b/i,
    "$whole replaces nothing: CREATE, not CREATE OR REPLACE (PostgreSQL's \"Security Considerations for Extension Scripts\"; the extension is trusted)");
is($meta->{provides}{snowflake}{file}, $whole, "META.json provides $whole");
my $version = '1.0';
$version = $step{$version} while exists $step{$version};
is($version, $default, 'update scripts lead from 1.0 to the default version');

# The pg_upgradecluster hook (README, "Upgrading PostgreSQL").
my $hook = 'debian/pg_upgradecluster-hook';
ok(-x $hook, "$hook is executable");
is(system("perl -c $hook 2>/dev/null"), 0, "$hook compiles");
my $rules = do { local (@ARGV, $/) = 'debian/rules'; <> };
my $hook_path = 'etc/postgresql-common/pg_upgradecluster.d/snowflake-';
like($rules, qr{install -D -m 755 \Q$hook\E \\\s+debian/postgresql-\$\$v-snowflake/\Q$hook_path\E\$\$v;},
    "debian/rules installs it as /${hook_path}NN in postgresql-NN-snowflake");
my $drill = do { local (@ARGV, $/) = 'test/upgrade/pg_upgradecluster.t'; <> };
like($drill, qr{my \$HOOK = "\$HOOK_DIRECTORY/snowflake-\$new";}, 'test/upgrade installs it there too');
like($drill, qr{my \$HOOK_DIRECTORY = '/\Qetc/postgresql-common/pg_upgradecluster.d\E';}, 'in that directory');
# run-parts --lsbsysinit (pg_upgradecluster's call) runs only names of this form.
like('snowflake-17', qr/^[a-zA-Z0-9_-]+$/, 'the name snowflake-NN is one run-parts runs');
my $directory = tempdir(CLEANUP => 1);
symlink(File::Spec->rel2abs($hook), "$directory/snowflake-99") or die "symlink: $!";
is(qx{"$directory/snowflake-99" 15 main 17 init 2>&1}, '', 'the hook of 99 says nothing in an upgrade into 17');
is($?, 0, 'and succeeds');

done_testing();
