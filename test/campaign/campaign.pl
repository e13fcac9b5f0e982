# The seeded fault campaign (doc/campaign.md): for each seed, a schedule of
# faults and operations drawn from it runs against a new cluster of real
# PostgreSQL nodes (test/perl/Campaign.pm) with writers on every node, and
# the independent checker (test/campaign/check.py) reads every ID any client
# got. A failing run prints its seed and schedule, is replayed from the seed,
# and is shrunk (delta debugging over its operations) to a schedule written
# out as a file for --schedule and as a ready-to-add cluster test.
#
#   campaign.pl [--seed N ...] [--operations N] [--budget-s N]
#               [--schedule FILE] [--out DIR] [--shrink-budget-s N]
#               [--no-shrink] [--no-replay] [--keep] [--tests-dir DIR]
#
# --seed (repeatable, or a list "1 2 3"): the seeds to run (default: 1);
# --budget-s: go on with the next seeds (after the last one given) until
# that many seconds have passed; --schedule: run that schedule instead of
# drawing one. Run it through test/campaign/run.sh (or scripts/test.sh
# campaign), which builds and installs the library (--mutant NAME: with a
# mutant of test/mutants/mutants.txt applied) and runs this as postgres.
use strict;
use warnings FATAL => 'all';

use File::Path qw(make_path);
use Getopt::Long;
use JSON::PP;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Campaign;
use Test::More;
use Time::HiRes qw(time);

my @seeds;
my $operations = 12;
my $budget_s = 0;
my $schedule_file;
my $out = PostgreSQL::Test::Utils::tempdir('campaign');
my $shrink_budget_s = 1800;
my ($no_shrink, $no_replay, $keep, $tests_dir, $mutant);
GetOptions(
	'seed=s' => \@seeds,
	'operations=i' => \$operations,
	'budget-s=i' => \$budget_s,
	'schedule=s' => \$schedule_file,
	'out=s' => \$out,
	'shrink-budget-s=i' => \$shrink_budget_s,
	'no-shrink' => \$no_shrink,
	'no-replay' => \$no_replay,
	'keep' => \$keep,
	'tests-dir=s' => \$tests_dir,
	'mutant=s' => \$mutant) or die "bad options\n";
@seeds = map { split /[\s,]+/ } @seeds;
@seeds = (1) unless @seeds;
make_path($out);

# Interrupted, the script still ends through its END blocks: the framework's
# stops every server it started.
$SIG{INT} = $SIG{TERM} = sub { die "campaign: interrupted by a signal\n"; };

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

my $started = time;
my $json = JSON::PP->new->canonical;
my %total = (runs => 0, ids => 0, duplicates => 0, operations => {}, faults => {}, seeds => []);
my $runs = 0;

sub say_line { diag(@_); return; }

sub figures_line
{
	my ($f) = @_;
	return sprintf('nodes %s; IDs checked %d, duplicates %d, sessions %d; operations %s; skipped %s; faults %s; session errors %s',
		join(' ', @{ $f->{nodes} }), $f->{ids}, $f->{duplicates}, $f->{sessions},
		$json->encode($f->{operations}), $json->encode($f->{skipped}),
		$json->encode($f->{faults}), $json->encode($f->{session_errors}));
}

sub one_run
{
	my ($schedule, $label) = @_;
	my $dir = sprintf('%s/run%03d', $out, ++$runs);
	my $t0 = time;
	my $verdict = Campaign::run_and_check($schedule, $dir, keep => $keep);
	$verdict->{seconds} = time - $t0;
	$verdict->{dir} = $dir;
	say_line(sprintf('%s: %d operations in %.0f s (records in %s): %s', $label,
		scalar @$schedule, $verdict->{seconds}, $dir, figures_line($verdict->{figures})));
	say_line("  FINDING $_->{kind}: $_->{text}") for @{ $verdict->{findings} }[ 0 .. min(9, $#{ $verdict->{findings} }) ];
	return $verdict;
}

sub min { return $_[0] < $_[1] ? $_[0] : $_[1]; }

sub add_totals
{
	my ($verdict, $seed) = @_;
	my $f = $verdict->{figures};
	$total{runs}++;
	$total{ids} += $f->{ids};
	$total{duplicates} += $f->{duplicates};
	$total{operations}{$_} += $f->{operations}{$_} for keys %{ $f->{operations} };
	$total{faults}{$_} += $f->{faults}{$_} for keys %{ $f->{faults} };
	push @{ $total{seeds} }, $seed;
	return;
}

# Whether a run of the subset fails as the original did (a finding of one of
# its kinds; duplicates first).
sub fails_alike
{
	my ($verdict, $kinds) = @_;
	my %found = map { $_ => 1 } Campaign::finding_kinds($verdict);
	return scalar grep { $found{$_} } @$kinds;
}

# Delta debugging (ddmin) over the operations: halves, then smaller chunks,
# down to single operations, keeping a subset that still fails alike.
sub shrink
{
	my ($schedule, $kinds, $label) = @_;
	my $deadline = time + $shrink_budget_s;
	my @ops = @$schedule;
	my %tried;
	my $n = 2;
	my $trials = 0;
	my $test = sub {
		my ($subset) = @_;
		my $key = Campaign::format_schedule($subset);
		return $tried{$key} if exists $tried{$key};
		return 0 if time > $deadline;
		$trials++;
		my $v = one_run($subset, "$label, shrinking: trial $trials, " . scalar(@$subset) . ' operations');
		return $tried{$key} = fails_alike($v, $kinds) ? 1 : 0;
	};
	while (@ops >= 2 && time < $deadline)
	{
		my @chunks;
		my $size = int((@ops + $n - 1) / $n);
		push @chunks, [ @ops[ $_ .. min($_ + $size - 1, $#ops) ] ] for grep { $_ % $size == 0 } 0 .. $#ops;
		my $reduced = 0;
		for my $i (0 .. $#chunks)
		{
			if ($test->($chunks[$i])) { @ops = @{ $chunks[$i] }; $n = 2; $reduced = 1; last; }
		}
		if (!$reduced && @chunks > 2)
		{
			for my $i (0 .. $#chunks)
			{
				my @complement = map { @{ $chunks[$_] } } grep { $_ != $i } 0 .. $#chunks;
				if ($test->(\@complement)) { @ops = @complement; $n = $n > 2 ? $n - 1 : 2; $reduced = 1; last; }
			}
		}
		next if $reduced;
		last if $n >= @ops;
		$n = min(2 * $n, scalar @ops);
	}
	# The empty schedule last: is the finding in the setup alone?
	return (\@ops, $trials);
}

sub write_out
{
	my ($seed, $schedule, $verdict, $original_count) = @_;
	my $text = Campaign::format_schedule($schedule);
	my $file = "$out/seed_$seed.schedule";
	open my $fh, '>', $file or die "$file: $!";
	print $fh "# campaign seed $seed, shrunk from $original_count operations to " . scalar(@$schedule)
	  . ($mutant ? " (mutant $mutant)" : '') . "\n# replay: test/campaign/run.sh --schedule build/campaign/found/seed_$seed.schedule\n$text";
	close $fh;
	my $number = 91;
	if ($tests_dir)
	{
		$number++ while glob(sprintf('%s/%03d_*.pl', $tests_dir, $number));
	}
	my $test = sprintf('%s/%03d_campaign_seed_%s.pl', $out, $number, $seed);
	my @findings = map { "#   $_->{kind}: " . substr($_->{text}, 0, 150) } @{ $verdict->{findings} }[ 0 .. min(4, $#{ $verdict->{findings} }) ];
	open $fh, '>', $test or die "$test: $!";
	print $fh <<"EOF";
# Found by the fault campaign (test/campaign, doc/campaign.md): seed $seed,
# shrunk from $original_count operations to @{[ scalar @$schedule ]}@{[ $mutant ? " (with mutant $mutant applied)" : '' ]}.
# test/perl/Campaign.pm builds the campaign's cluster (a with a synchronous
# standby, b, c leasing from a registry, d checked against it), runs these
# operations with writers on every node, and test/campaign/check.py checks
# every ID a client got. What the campaign found:
@{[ join("\n", @findings) ]}
use strict;
use warnings FATAL => 'all';

use Campaign;
use SnowflakeTest;
use Test::More;

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

Campaign::test_schedule(<<'SCHEDULE', 'campaign seed $seed');
$text
SCHEDULE

done_testing();
EOF
	close $fh;
	return ($file, $test);
}

sub campaign_seed
{
	my ($seed, $schedule, $label) = @_;
	say_line("=== $label ===");
	say_line("schedule:\n" . Campaign::format_schedule($schedule));
	my $verdict = one_run($schedule, $label);
	add_totals($verdict, $seed);
	my @findings = @{ $verdict->{findings} };
	ok(!@findings, "$label: no duplicate, no wrong identity, every node live, no crash, no timeout")
	  and return;
	my @kinds = Campaign::finding_kinds($verdict);
	@kinds = ('duplicate') if grep { $_ eq 'duplicate' } @kinds;
	say_line("FAILED: $label, seed $seed; findings of kinds @kinds; its schedule:\n" . Campaign::format_schedule($schedule));
	if (!$no_replay && !defined $schedule_file)
	{
		my $again = Campaign::generate($seed, Campaign::drawn_count($schedule));
		is(Campaign::format_schedule($again), Campaign::format_schedule($schedule),
			"seed $seed: the seed draws the same schedule again");
		my $replay = one_run($again, "replay of seed $seed");
		say_line(fails_alike($replay, \@kinds)
			? "seed $seed: the replay fails alike (@kinds)"
			: "seed $seed: the replay did not fail alike (the timing differs between runs)");
	}
	my ($shrunk, $trials) = ($schedule, 0);
	($shrunk, $trials) = shrink($schedule, \@kinds, "seed $seed") unless $no_shrink;
	my ($file, $test) = write_out($seed, $shrunk, $verdict, scalar @$schedule);
	say_line("seed $seed: shrunk in $trials trials from " . scalar(@$schedule) . ' to ' . scalar(@$shrunk)
		  . " operations:\n" . Campaign::format_schedule($shrunk)
		  . "written to $file (replay: --schedule) and $test (a cluster test to add to test/t/)");
	return;
}

if (defined $schedule_file)
{
	open my $fh, '<', $schedule_file or die "$schedule_file: $!";
	my $schedule = Campaign::parse_schedule(do { local $/; <$fh> });
	my ($seed) = $schedule_file =~ /seed_(\d+)/;
	campaign_seed($seed // 'file', $schedule, "schedule $schedule_file");
}
else
{
	my @queue = @seeds;
	my $next = $seeds[-1] + 1;
	my $longest = 0;
	while (1)
	{
		my $seed = shift @queue;
		if (!defined $seed)
		{
			last unless $budget_s && time - $started + $longest < $budget_s;
			$seed = $next++;
		}
		my $t0 = time;
		campaign_seed($seed, Campaign::generate($seed, $operations), "seed $seed");
		$longest = time - $t0 if time - $t0 > $longest;
	}
}

say_line(sprintf('campaign%s: %d runs (seeds %s) in %.0f s; operations %s; faults %s; IDs checked %d; duplicates %d',
	$mutant ? " with mutant $mutant" : '', $total{runs}, join(' ', @{ $total{seeds} }), time - $started,
	$json->encode($total{operations}), $json->encode($total{faults}), $total{ids}, $total{duplicates}));
done_testing();
