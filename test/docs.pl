#!/usr/bin/env perl
# The documents' checks, run by scripts/test.sh unit (no server, no build):
#
# - every guide in doc/ is listed in doc/README.md, the guides' index;
# - every Markdown link of a tracked .md file leads to a file of the
#   repository, and its #anchor to a heading of that file (GitHub's anchors);
# - every citation of a section, in any tracked file (comments, error HINTs,
#   SQL scripts, documents): README, "Heading" or doc/NAME.md, "Heading" (or
#   in parentheses), names a heading of that file; README's "words" names a
#   heading or quotes the file's words;
# - every path of the repository a tracked file names (doc/..., test/...,
#   src/..., scripts/..., and any NAME.md) exists;
# - the table of CONTRIBUTING.md, "Tests", has a row for each layer of
#   scripts/test.sh, in its order (ALL_LAYERS), and no other;
# - no source file under src/ is over 500 lines: a file has one job, which
#   its header states and src/README.md's map names (issue 46).
#
# CHANGELOG.md is history: what it names was true of its release, and is not
# checked. Run from the top of the checkout: prove test/docs.pl.
use strict;
use warnings;
use File::Basename qw(dirname basename);
use Test::More;

# The files of the checkout: tracked, or new and not ignored.
my @tracked = grep { -e $_ } split /\0/, qx{git ls-files -z --cached --others --exclude-standard};
# Outside a git checkout (a copy of the tree): every file below.
@tracked = split /\n/, qx{find . -type f -not -path './.git/*' -not -path './build/*' | sed 's|^\\./||'}
  unless @tracked;
my %tracked = map { $_ => 1 } @tracked;
my %directories;
for my $file (@tracked)
{
	my $directory = $file;
	$directories{$directory} = 1 while ($directory =~ s{/[^/]*$}{});
}
my %basenames = map { basename($_) => 1 } @tracked;

# The patterns of .gitignore as regular expressions, read here so that the
# check runs where git is not installed (a fresh root's copy of the tree): a
# leading or inner slash anchors a pattern at the top, a trailing one is
# dropped (what is below a directory is ignored with it), * stays in a name.
my @ignored = map {
	my $pattern = $_;
	$pattern =~ s{/$}{};
	my $anchored = $pattern =~ s{^/}{} || $pattern =~ m{/};
	my $regex = join '[^/]*', map { quotemeta } split /\*/, $pattern, -1;
	$anchored ? qr{^$regex(?:/|$)} : qr{(?:^|/)$regex(?:/|$)};
} grep { /\S/ && !/^#/ } split /\n/, slurp('.gitignore');
sub ignored
{
	my ($path) = @_;
	return scalar grep { $path =~ $_ } @ignored;
}

# $path relative to the directory $from, as a path from the top, or undef if
# it leaves the repository.
sub resolve
{
	my ($from, $path) = @_;
	my @parts;
	for my $part (split m{/}, ($from eq '.' ? '' : "$from/") . $path)
	{
		next if $part eq '' || $part eq '.';
		if ($part eq '..') { return undef unless @parts; pop @parts; }
		else { push @parts, $part; }
	}
	return join '/', @parts;
}

sub slurp
{
	my ($file) = @_;
	open my $fh, '<', $file or die "$file: $!";
	local $/;
	return scalar <$fh>;
}

# The text files a reader reads: sources, scripts, tests, documents.
my @texts = grep {
	$_ ne 'CHANGELOG.md'
	  && $_ ne 'test/docs.pl'    # its own examples
	  && !m{(^|/)package-lock\.json$}
	  && !m{\.(inc|png|jpg|svg|zip|gz|keys)$}
	  && -f $_
	  && -T $_
} @tracked;

# GitHub's anchor of a heading: lower case, punctuation but - and _ dropped,
# spaces as -; a heading met again gets -1, -2, ...
sub anchors_of
{
	my ($file) = @_;
	my (%anchors, %headings, %seen);
	my $in_code = 0;
	for my $line (split /\n/, slurp($file))
	{
		$in_code = !$in_code if $line =~ /^\s*(```|~~~)/;
		next if $in_code;
		# A paragraph's bold lead (**Into a directory of its own**) is a
		# section a citation may name too, without an anchor.
		if ($line =~ /^\*\*(.+?)\.?\*\*/)
		{
			$headings{$1} = 1;
			next;
		}
		next unless $line =~ /^#{1,6}\s+(.*?)\s*#*\s*$/;
		my $heading = $1;
		(my $text = $heading) =~ s/\[([^\]]*)\]\([^)]*\)/$1/g;
		$text =~ s/`//g;
		(my $title = $text) =~ s/^\d+\.\s+//;    # "3. The settings, on every node"
		$headings{$title} = 1;
		my $anchor = lc $text;
		$anchor =~ s/[^\w\- ]//g;
		$anchor =~ s/ /-/g;
		my $unique = $seen{$anchor}++ ? "$anchor-" . ($seen{$anchor} - 1) : $anchor;
		$anchors{$unique} = 1;
	}
	return { anchors => \%anchors, headings => \%headings };
}
my %cache;
sub headings { my ($file) = @_; return $cache{$file} //= anchors_of($file); }

## The guides' index --------------------------------------------------------

my $index = slurp('doc/README.md');
my %listed = map { $_ => 1 } $index =~ /\]\(([\w.-]+\.md)\)/g;
for my $guide (sort grep { m{^doc/[^/]+\.md$} && $_ ne 'doc/README.md' } @tracked)
{
	my $name = basename($guide);
	ok($listed{$name}, "doc/README.md lists $name");
}

## Links ---------------------------------------------------------------------

for my $file (sort grep { /\.md$/ } @texts)
{
	my $text = slurp($file);
	$text =~ s/^(```|~~~).*?^\1//msg;    # code blocks are not links
	my @broken;
	while ($text =~ /\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)
	{
		my $link = $1;
		next if $link =~ m{^(https?|mailto):};
		my ($path, $anchor) = $link =~ /^([^#]*)(?:#(.*))?$/;
		my $target = $path eq '' ? $file : resolve(dirname($file), $path) // "(outside)";
		if (!$tracked{$target} && !$directories{$target})
		{
			push @broken, "$link: no $target";
		}
		elsif (defined $anchor && $target =~ /\.md$/ && !headings($target)->{anchors}{$anchor})
		{
			push @broken, "$link: $target has no heading with the anchor #$anchor";
		}
	}
	is(scalar @broken, 0, "$file: every link leads to a file, and to a heading of it")
	  or diag join("\n", @broken);
}

## Sections cited -------------------------------------------------------------

# The file a citation names: README (the top one), CONTRIBUTING, or a path.
sub cited_file
{
	my ($name, $from) = @_;
	return 'README.md' if $name eq 'README' || $name eq 'README.md';
	return 'CONTRIBUTING.md' if $name =~ /^CONTRIBUTING(\.md)?$/;
	return $name if $tracked{$name};
	my $beside = resolve(dirname($from), $name);
	return $beside if defined $beside && $tracked{$beside};
	return "doc/$name" if $tracked{"doc/$name"};
	return undef;
}

my $cited = 0;
for my $file (sort @texts)
{
	my $text = slurp($file);
	$text =~ s/\\"/"/g;    # a HINT's quotes in C++ strings
	# Lines joined, without their comment marks, so that a citation may run
	# over a line break.
	$text =~ s/[ \t]*\n[ \t]*(?:\/\/|#|--|\*|;)?[ \t]*/ /g;
	my @wrong;
	while ($text =~ /\b(README(?:\.md)?|CONTRIBUTING(?:\.md)?|[\w\/.-]+\.md)('s)?(,| \(|) "([^"]{2,80})"/g)
	{
		my ($name, $possessive, $separator, $section) = ($1, $2, $3, $4);
		next unless $possessive || $separator ne '';
		next if $section =~ /\$/;    # a shell variable, not a section
		my $target = cited_file($name, $file);
		if (!defined $target)
		{
			push @wrong, "$name, \"$section\": no such file";
			next;
		}
		next unless $target =~ /\.md$/;
		$cited++;
		# The heading, or its first words ("Takeovers" for "Takeovers:
		# promotion, restore, copy, switchover").
		next if grep { $_ eq $section || /^\Q$section\E\b/ } keys %{ headings($target)->{headings} };
		if ($possessive)
		{
			(my $words = slurp($target)) =~ s/\s+/ /g;
			next if index($words, $section) >= 0;
		}
		push @wrong, "$name, \"$section\": $target has no such heading";
	}
	is(scalar @wrong, 0, "$file: every section it cites exists") or diag join("\n", @wrong)
	  if @wrong;
}
ok($cited > 20, "sections cited, each checked above ($cited)");

## Paths ---------------------------------------------------------------------

# PostgreSQL's own source tree (src/backend/...), build outputs and
# placeholders (NNN, *, $VARIABLE) are not paths of this repository.
my $postgresql_source = qr{^src/(backend|include|test|bin|common|port|interfaces|makefiles|pl|fe_utils|tools|timezone)/};
my @missing;
# A path named from a file may be relative to the folder of that file or of
# one above it (sql/setup.sql in test/bench/README.md); a test's number
# names its file (test/t/063), a stem its sources (src/core/base32).
sub exists_from
{
	my ($file, $path) = @_;
	my $directory = dirname($file);
	while (1)
	{
		my $full = resolve($directory, $path);
		if (defined $full)
		{
			return 1 if $tracked{$full} || $directories{$full};
			return 1 if grep { index($_, $full) == 0 && substr($_, length $full, 1) =~ /[._]/ } @tracked;
		}
		last if $directory eq '.';
		$directory = dirname($directory);
	}
	# Made by a build or a test (.gitignore names it).
	return ignored($path);
}
for my $file (sort @texts)
{
	my $text = slurp($file);
	while ($text =~ m{(?<![\w./\$-])((?:\.ci|contrib|debian|doc|expected|scripts|sql|src|test)/[\w./-]*[\w])}g)
	{
		my $path = $1;
		# Followed by a pattern's characters (sql/snowflake--*.sql,
		# debian/postgresql-$$v-snowflake): a pattern, not a path.
		next if substr($text, pos($text)) =~ /^[\w.\/\\-]*[*\$<{]/;
		# Placeholders: NNN, NAME, 09x, _N.
		next if $path =~ m{(^|/)[A-Z]{3,}\b|NNN|\d+x_|_N\b};
		# PostgreSQL's source tree (src/backend/..., contrib/spi), not ours.
		next if $path =~ m{^(src|contrib)/([^/]+)} && !$directories{"$1/$2"} && !$tracked{"$1/$2"};
		$path =~ s/\.$//;
		push @missing, "$file: $path" unless exists_from($file, $path);
	}
	my %written = map { $_ => 1 } $text =~ /--out\s+([\w-]+\.md)\b/g;    # files a command writes
	while ($text =~ m{(?<![\w/.-])([\w-]+\.md)\b}g)
	{
		my $name = $1;
		next if $written{$name};
		next if $name =~ /^[A-Z]{3,}\.md$/ && !$basenames{$name} && $name ne 'README.md';
		push @missing, "$file: $name" unless $basenames{$name} || exists_from($file, $name);
	}
}
is(scalar @missing, 0, 'every path of the repository that a file names exists')
  or diag join("\n", @missing);

## The layers ------------------------------------------------------------------

my ($all_layers) = slurp('scripts/test.sh') =~ /^ALL_LAYERS=\(([^)]*)\)$/m;
my @layers = split ' ', $all_layers // '';
my $contributing = slurp('CONTRIBUTING.md');
my ($table) = $contributing =~ /^\| layer \| where \| what it proves \|\n\| --- .*?\n(.*?)\n\n/ms;
my @rows;
for my $row (split /\n/, $table // '')
{
	my ($layer) = $row =~ /^\| `(\w+)`/ or next;
	push @rows, $layer unless @rows && $rows[-1] eq $layer;
}
is_deeply(\@rows, \@layers,
	"CONTRIBUTING.md's table of the layers names scripts/test.sh's ALL_LAYERS, in order (@layers)");

## The sources' size ----------------------------------------------------------

# A file longer than this does more than one job: split it by job (each
# file's header stating its own, src/README.md's map naming it), not in
# halves.
my $most_lines = 500;
my @long;
for my $source (sort grep { m{^src/} && -f $_ && -T $_ } @tracked)
{
	my $lines = () = slurp($source) =~ /\n/g;
	push @long, "$source: $lines lines" if $lines > $most_lines;
}
is(scalar @long, 0, "no file under src/ is over $most_lines lines")
  or diag join("\n", @long);

done_testing();
