# The registry table as doc/registry.md creates it. The tests that set a
# registry up the way the doc tells an administrator to take the doc's own
# statement, so the doc cannot drift from what they prove; and one test
# compares it with the table the worker creates (src/pg/registry/client.cpp),
# so the worker cannot drift from the doc. The same for the rest of the
# doc's setup (doc_block): each of its blocks marked `<!-- setup: NAME -->`,
# which test/t/090_registry_guide.pl runs as written.
package RegistryTable;

use strict;
use warnings;

use Carp;
use File::Basename qw(dirname);
use File::Spec;

# The doc's CREATE TABLE statement, with its table name (snowflake.
# snowflake_registry) replaced by $table if one is given. The doc is read
# from the checkout this module is in (or from the copy of its layout that
# the cluster-test layer makes).
sub doc_statement
{
	my ($table) = @_;
	my $doc = dirname(File::Spec->rel2abs(__FILE__)) . '/../../doc/registry.md';
	open my $fh, '<', $doc or croak "$doc: $!";
	my $text = do { local $/; <$fh> };
	my ($statement) = $text =~ /^(CREATE TABLE snowflake\.snowflake_registry \(.*?^\);)$/ms
	  or croak "$doc has no CREATE TABLE snowflake.snowflake_registry ( ... ); statement";
	$statement =~ s/snowflake\.snowflake_registry/$table/ if defined $table;
	return $statement;
}

# The text of the fenced block that follows `<!-- setup: $name -->` in the
# doc (without its fences).
sub doc_block
{
	my ($name) = @_;
	my $text = _doc_text();
	my ($block) = $text =~ /^<!-- setup: \Q$name\E -->\n```[a-z]*\n(.*?)^```$/ms
	  or croak "doc/registry.md has no block <!-- setup: $name -->";
	return $block;
}

# The names of every setup block of the doc, in its order.
sub doc_block_names
{
	return _doc_text() =~ /^<!-- setup: (\S+) -->$/mg;
}

sub _doc_text
{
	my $doc = dirname(File::Spec->rel2abs(__FILE__)) . '/../../doc/registry.md';
	open my $fh, '<', $doc or croak "$doc: $!";
	return do { local $/; <$fh> };
}

# A query describing a table's columns (name, type, NOT NULL, in order) and
# its primary key: two tables of the same shape give the same text.
sub shape_query
{
	my ($table) = @_;
	return qq{
SELECT string_agg(format('%s %s%s', attname, format_type(atttypid, atttypmod),
                         CASE WHEN attnotnull THEN ' NOT NULL' ELSE '' END), ', ' ORDER BY attnum)
       || '; ' || (SELECT pg_get_constraintdef(oid) FROM pg_constraint
                   WHERE conrelid = '$table'::regclass AND contype = 'p')
FROM pg_attribute WHERE attrelid = '$table'::regclass AND attnum > 0 AND NOT attisdropped};
}

1;
