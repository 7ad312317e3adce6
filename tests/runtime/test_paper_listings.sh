# The paper's Listings 1-2 as a program: cold start, then warm restarts that go on counting.
source "$SRCDIR/lib.sh"
compile listings.exe "$SRCDIR/../../examples/PaperListings.cs"
expect_out "cold start: roots 1 and 2" spm --sp-store=store listings.exe 3
expect_out "warm restart: i = 3, count = 3, shared = True, d = 0" spm --sp-store=store listings.exe 4
expect_out "after 0 periods: i = 7, count = 7" spm --sp-store=store listings.exe 0
