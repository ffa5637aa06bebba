#!/usr/bin/env perl
# Checks the code blocks and links of README.md and docs/*.md:
#   ```cpp   must appear verbatim in a file under examples/, which the build
#            compiles and the tests run: so every C++ example compiles.
#   ```lua   must appear verbatim in a file under lua/ (the scripts the tests run).
#   ```sh    every repository path it names (scripts/..., bench/..., tools/...,
#            tests/..., examples/..., .ci/..., lua/..., docs/...) must exist; the
#            commands themselves are CI's own stages, not run again here.
#   other    (```cmake recipes, whose projects tests/consumers/ builds in CI;
#            untagged blocks: program output, transcripts, ACL rules, layouts)
#            are text: not checked.
#   links    every relative link [..](path), [..](path#anchor) and [..](#anchor)
#            must name an existing file and, for a Markdown target, one of its
#            headings (GitHub's anchor rules).
use strict;
use warnings;
use File::Basename qw(dirname);
my $root = shift // '.';

# Linked from the README but written on another branch: reported, not failed,
# while missing. Remove an entry once its file is merged.

sub slurp {
  my ($f) = @_;
  open my $fh, '<:encoding(UTF-8)', $f or die "$f: $!";
  local $/;
  return scalar <$fh>;
}

sub sources { return map { [$_, slurp($_)] } glob "$root/$_[0]" }
my %sources = (cpp => [sources('examples/*.cpp')], lua => [sources('lua/*.lua')]);

# GitHub's heading anchors: lower case, punctuation dropped, spaces to '-',
# repeats numbered -1, -2, ...
sub anchors {
  my ($text) = @_;
  $text =~ s/^```.*?^```//msg;
  my (%seen, %anchors);
  for my $h ($text =~ /^#+[ \t]+(.*?)[ \t]*$/mg) {
    (my $a = lc $h) =~ s/[^\p{L}\p{N}\p{Mn} _-]//g;
    $a =~ s/ /-/g;
    my $n = $seen{$a}++;
    $anchors{$n ? "$a-$n" : $a} = 1;
  }
  return \%anchors;
}

my ($blocks, $bad) = (0, 0);
sub fail { $bad++; print STDERR @_ }

sub check_block {
  my ($doc, $lang, $block, $n) = @_;
  if (my $files = $sources{$lang}) {
    $blocks++;
    return if grep { index($_->[1], $block) >= 0 } @$files;
    my $dir = $lang eq 'cpp' ? 'examples/*.cpp' : 'lua/*.lua';
    fail("$doc: $lang block $n is not in any $dir file:\n$block\n");
  } elsif ($lang eq 'sh') {
    $blocks++;
    for my $path ($block =~ m{(?:^|[\s(=])((?:scripts|bench|tools|tests|examples|\.ci|lua|docs)/[\w./-]*\w)}g) {
      fail("$doc: sh block $n names $path, which does not exist\n") unless -e "$root/$path";
    }
  }
}

sub check_links {
  my ($doc, $text) = @_;
  (my $prose = $text) =~ s/^```.*?^```//msg;
  $prose =~ s/`[^`\n]*`//g;
  for my $link ($prose =~ /\]\(([^)\s]+)\)/g) {
    next if $link =~ m{^[a-z]+:}i;
    my ($path, $anchor) = $link =~ /^([^#]*)(?:#(.*))?$/;
    my $target = $path eq '' ? $doc : join '/', grep { $_ ne '.' } dirname($doc), $path;
    1 while $target =~ s{(^|/)(?!\.\./)[^/]+/\.\./}{$1};
    if (!-e "$root/$target") {
      fail("$doc: link $link: no file $target\n");
      next;
    }
    next unless defined $anchor && $target =~ /\.md$/;
    fail("$doc: link $link: $target has no heading #$anchor\n") unless anchors(slurp("$root/$target"))->{$anchor};
  }
}

my @docs = ('README.md', map { s{^\Q$root\E/}{}r } sort glob "$root/docs/*.md");
for my $doc (@docs) {
  my $text = slurp("$root/$doc");
  my %n;
  while ($text =~ /^[ \t]*```(\w*)[ \t]*\n(.*?)^[ \t]*```/msg) {
    my ($lang, $block) = ($1, $2);
    check_block($doc, $lang, $block, ++$n{$lang});
  }
  check_links($doc, $text);
  die "README has no cpp blocks\n" if $doc eq 'README.md' && !$n{cpp};
}
print "$blocks code blocks checked in ", scalar(@docs), " documents (", join(', ', @docs), ")\n";
exit($bad ? 1 : 0);
