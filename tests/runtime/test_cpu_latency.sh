# --sp-cpu-latency (sp-cpu-latency.c): the limit is held, as the kernel reports
# it, while the program runs and only then; a refused request is a warning and
# persistence goes on; bad values are refused, naming the option.
source "$SRCDIR/lib.sh"
compile cpu.exe "$SRCDIR/CpuLatency.cs"

# Bad values: refused before the program runs.
for bad in "" "=" "=-1" "=1000001" "=20us" "=fast"; do
	expect_fail "--sp-cpu-latency takes the longest wake-up latency" spm --sp-store=store --sp-cpu-latency$bad cpu.exe persist
done

# A request the system refuses (here: no such device): a warning naming the
# device and why; the program runs and its state persists and restores.
out=$(SPMONO_TEST_CPU_LATENCY_DEVICE="$PWD/no/such/device" spm --sp-store=store --sp-mode=incremental \
	--sp-cpu-latency=0 cpu.exe persist 2>&1) || fail "a refused latency request stopped the program: $out"
echo "$out" | grep -Eq -- "warning: --sp-cpu-latency=0: cannot hold the limit through .*/no/such/device \(No such file or directory\)" \
	|| fail "no warning naming the device and the reason: $out"
expect_out "restored 1000" spm --sp-store=store cpu.exe restore

# Held: with write access to the device (root), the program reads the limit it
# asked for, and after it exits the limit is the machine's again.
if [ ! -w /dev/cpu_dma_latency ] || [ ! -r /dev/cpu_dma_latency ]; then
	echo "SKIP (held): no read and write access to /dev/cpu_dma_latency here; the refusal and the options were checked"
	exit 0
fi
before=$(spm cpu.exe read | sed -n 's/^latency //p')
[ -n "$before" ] || fail "could not read the machine's limit"
# A limit below the machine's, so that it is the one the kernel reports (another process may hold one).
want=37
[ "$before" -gt 1 ] || { echo "SKIP (held): another process holds the limit at $before us"; exit 0; }
[ "$before" -gt "$want" ] || want=$(( before - 1 ))
out=$(spm --sp-store=store2 --sp-verbose --sp-cpu-latency=$want cpu.exe read 2>&1) || fail "reading with the limit held: $out"
echo "$out" | grep -q "^latency $want\$" || fail "the program saw another limit than the $want us it asked for: $out"
echo "$out" | grep -q "CPUs held to a wake-up latency of $want us" || fail "--sp-verbose did not say the limit is held: $out"
after=$(spm cpu.exe read | sed -n 's/^latency //p')
[ "$after" = "$before" ] || fail "the limit stayed at $after us after the program exited (was $before)"
echo "limit $before us, $want us while held, $after us after"
