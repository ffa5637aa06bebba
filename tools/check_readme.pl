#!/usr/bin/env perl
# Every ```cpp block of README.md must appear verbatim in a file under
# examples/, which the build compiles: so every example in the README compiles.
use strict;
use warnings;
my $root = shift // '.';
local $/;
open my $fh, '<', "$root/README.md" or die "README.md: $!";
my $readme = <$fh>;
my @sources;
for my $f (glob "$root/examples/*.cpp") {
  open my $s, '<', $f or die "$f: $!";
  push @sources, [$f, scalar <$s>];
}
my ($blocks, $bad) = (0, 0);
while ($readme =~ /```cpp\n(.*?)```/sg) {
  my $block = $1;
  $blocks++;
  next if grep { index($_->[1], $block) >= 0 } @sources;
  $bad++;
  print STDERR "README cpp block $blocks is not in any examples/*.cpp file:\n$block\n";
}
die "README has no cpp blocks\n" unless $blocks;
print "$blocks README code blocks found verbatim in examples/\n";
exit($bad ? 1 : 0);
