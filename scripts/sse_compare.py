#!/usr/bin/env python3
"""Compares a rewritten stream from a live gateway with `agui gateway`'s
output for the same input, where the two may have cut the input into other
pushes (Python 3 stdlib only).

    sse_compare.py [--stop] GOT WANT SOURCE

Exit 0 and prints `exact` if GOT and WANT are the same bytes. Otherwise the
only difference pushes may make (see docs/gateway.md): a block
larger than the raw buffer goes out piece by piece ahead of its verdict, and
one found bad at its end (or one the input ends inside of, inside its JSON)
is cut with the mark `\\ndata: \\x01\\n\\n` (its LF may be the line end the
block stopped at), after which the stream stops whatever the policy; how
much of it went out, or whether any did (a verdict may come before the
block outgrows the buffer), depends on where pushes split. So exit 0 and
print `cut` if:

  - each output ends a block (`\\n\\n`) and holds at most one mark, and at
    least one holds one;
  - before the cut block (up to the last blank line before the mark) both
    are the same bytes;
  - what went out of the cut block before the mark is input bytes (SOURCE);
  - both marked: the same bytes after the mark; one marked: after the block,
    with --stop (the stop policy), the unmarked one has the same bytes as
    the marked one after its mark, else (drop, pass) it ends a block.

A fixed capacity is the other thing pushes decide (docs/capacities.md: a verdict that
needs what did not fit is a capacity error, never a wrong verdict): a frame
that arrives within one push is read in place, one that spans pushes must
fit the frame buffer. So also exit 0 and print `capacity` if one output
ends in a RUN_ERROR with code AGUI_STREAM_CAPACITY for a frame larger
than the frame buffer and the other does not (they are compared up to the
last blank line before they part), each ends a block and holds at most one
mark, and what went out of a cut block is input.

Under the drop or pass policy a capacity verdict has no RUN_ERROR: the
frame is dropped. So, without --stop, also print `capacity` if the two
are the same but for one block in one of them, a block of SOURCE larger
than 64 KiB (the gateways' frame buffer) that the other dropped.

Otherwise exit 1 with a reason.
"""

import sys

MARK = b"\ndata: \x01\n\n"


def capacity_end(out):
    """The last block is a RUN_ERROR for a frame larger than the frame
    buffer (code AGUI_STREAM_CAPACITY)."""
    last = out.rstrip(b"\n").rsplit(b"\n\n", 1)[-1]
    return (b'"type":"RUN_ERROR"' in last and b'"code":"AGUI_STREAM_CAPACITY"' in last
            and b"-byte frame buffer" in last)


def dropped_for_capacity(got, want, source):
    """One output is the other with one more block, larger than the frame
    buffer and a block of the input: the other dropped it (a capacity
    verdict under the drop or pass policy)."""
    longer, shorter = (got, want) if len(got) > len(want) else (want, got)
    common = 0
    while common < len(shorter) and longer[common] == shorter[common]:
        common += 1
    start = longer.rfind(b"\n\n", 0, common) + 2 if b"\n\n" in longer[:common] else 0
    end = longer.find(b"\n\n", start)
    if end < 0:
        return False
    block = longer[start : end + 2]
    return (len(block) > 65536 and longer[:start] + longer[end + 2 :] == shorter
            and source.find(block) >= 0)


def main():
    args = sys.argv[1:]
    stop = False
    if args and args[0] == "--stop":
        stop = True
        args = args[1:]
    if len(args) != 3:
        sys.exit(__doc__)
    got, want, source = (open(p, "rb").read() for p in args)
    if got == want:
        print("exact")
        return 0

    def fail(why):
        print("differ: " + why)
        return 1

    for name, out in (("got", got), ("want", want)):
        if out and not out.endswith(b"\n\n"):
            return fail(name + " does not end a block")
        if out.count(MARK) > 1:
            return fail(name + " holds more than one cut mark")

    capacity = [capacity_end(out) for out in (got, want)]
    if capacity[0] != capacity[1]:
        common = 0
        while common < min(len(got), len(want)) and got[common] == want[common]:
            common += 1
        start = got.rfind(b"\n\n", 0, common) + 2 if b"\n\n" in got[:common] else 0
        for out in (got, want):
            if MARK in out:
                streamed = out[start:].split(MARK)[0]
                if source.find(streamed) < 0:
                    return fail("what went out of the cut block is not input")
        print("capacity")
        return 0

    marked = [out for out in (got, want) if MARK in out]
    if not marked and not stop and dropped_for_capacity(got, want, source):
        print("capacity")
        return 0
    if not marked:
        return fail("no cut mark: the outputs should be the same")

    def parts(out):
        """(before the cut block, what went out of it, after the mark)."""
        head, tail = out.split(MARK)
        start = head.rfind(b"\n\n") + 2 if b"\n\n" in head else 0
        return head[:start], head[start:], tail

    if len(marked) == 2:
        (gp, gs, gt), (wp, ws, wt) = parts(got), parts(want)
        if gp != wp:
            return fail("the outputs differ before the cut block")
        for s in (gs, ws):
            if source.find(s) < 0:
                return fail("what went out of the cut block is not input")
        if gt != wt:
            return fail("the outputs differ after the cut mark")
        print("cut")
        return 0
    cut, whole = (got, want) if MARK in got else (want, got)
    prefix, streamed, tail = parts(cut)
    if not whole.startswith(prefix):
        return fail("the outputs differ before the cut block")
    if source.find(streamed) < 0:
        return fail("what went out of the cut block is not input")
    rest = whole[len(prefix):]
    if stop and rest != tail:
        return fail("under the stop policy the endings differ")
    print("cut")
    return 0


if __name__ == "__main__":
    sys.exit(main())
