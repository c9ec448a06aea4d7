//! agui-stream on a Cortex-M4 (QEMU `mps2-an386`): the bundled streams
//! through the pipeline and the gateway rewriter in 64-byte pushes, the
//! report over semihosting, exit status 0 only if every outcome equals the
//! host's (`build.rs`).
//!
//! Three runs of every stream: the first prints (and, over the whole
//! program, gives the stack's high-water mark from a painted RAM); the
//! second paints a window below each `push`/`finish` and measures how deep
//! the call went; the third times each call with SysTick. All three must
//! give the expected outcome.
#![no_std]
#![no_main]

mod run;

// The global logger: defmt frames on semihosting stdout.
#[cfg(feature = "defmt")]
use defmt_semihosting as _;

use core::fmt::{self, Write as _};

use agui_stream::{EventType, Stage};
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::{ExceptionFrame, entry, exception};
use cortex_m_semihosting::debug::{self, EXIT_FAILURE, EXIT_SUCCESS};
use cortex_m_semihosting::hio;

use run::{Buffers, Call, End, Meter, Outcome};

mod expected {
    use crate::run::Outcome;
    include!(concat!(env!("OUT_DIR"), "/expected.rs"));
}

/// The report's text: semihosting stdout, or stderr when defmt's frames
/// take stdout.
struct Text;

impl fmt::Write for Text {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        #[cfg(not(feature = "defmt"))]
        let h = hio::hstdout();
        #[cfg(feature = "defmt")]
        let h = hio::hstderr();
        h.map_err(|_| fmt::Error)?
            .write_all(s.as_bytes())
            .map_err(|_| fmt::Error)
    }
}

macro_rules! say {
    ($($arg:tt)*) => {{ let _ = writeln!(Text, $($arg)*); }};
}

/// The value painted on free stack.
const PAINT: u32 = 0xA5C3_5A3C;
/// Bytes below a measured call's caller painted before the call.
const WINDOW: usize = 32 * 1024;
/// Bytes right below the stack pointer left alone by the painter.
const GUARD: usize = 64;

unsafe extern "C" {
    /// End of `.bss`/`.uninit` (cortex-m-rt): the lowest address the
    /// stack may reach.
    static __sheap: u32;
    /// The initial stack pointer (cortex-m-rt: the end of RAM).
    static _stack_start: u32;
}

/// Paints `[from, to)` (word-aligned).
#[inline(always)]
fn paint(from: usize, to: usize) {
    let mut p = from & !3;
    while p + 4 <= to {
        // SAFETY: the range lies between the end of the statics and the
        // current stack pointer: memory nothing else uses.
        unsafe { core::ptr::write_volatile(p as *mut u32, PAINT) };
        p += 4;
    }
}

/// The lowest address in `[from, to)` whose word is no longer painted
/// (`to` if none).
#[inline(always)]
fn lowest_touched(from: usize, to: usize) -> usize {
    let mut p = from & !3;
    while p + 4 <= to {
        // SAFETY: as in `paint`.
        if unsafe { core::ptr::read_volatile(p as *const u32) } != PAINT {
            return p;
        }
        p += 4;
    }
    to
}

fn sp() -> usize {
    cortex_m::register::msp::read() as usize
}

/// Runs `f` one frame down, so that all it uses is below the caller's
/// stack pointer.
#[inline(never)]
fn below<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Does nothing around the calls (the printing run).
struct Plain;

impl Meter for Plain {
    fn call<R>(&mut self, _: Call, f: impl FnOnce() -> R) -> R {
        below(f)
    }
}

/// The deepest each kind of call went below its caller's stack pointer.
#[derive(Default)]
struct Stack {
    worst: [usize; 4],
    overflow: bool,
}

impl Meter for Stack {
    fn call<R>(&mut self, what: Call, f: impl FnOnce() -> R) -> R {
        let top = sp();
        let bottom = top - WINDOW;
        paint(bottom, top - GUARD);
        let r = below(f);
        let low = lowest_touched(bottom, top - GUARD);
        if low == bottom {
            self.overflow = true;
        }
        let depth = top - low;
        if let Some(w) = self.worst.get_mut(what as usize) {
            *w = (*w).max(depth);
        }
        r
    }
}

/// SysTick ticks spent in each kind of call.
struct Ticks {
    syst: cortex_m::peripheral::SYST,
    ticks: [u64; 4],
}

impl Meter for Ticks {
    fn call<R>(&mut self, what: Call, f: impl FnOnce() -> R) -> R {
        let before = cortex_m::peripheral::SYST::get_current();
        let r = below(f);
        let after = cortex_m::peripheral::SYST::get_current();
        // A down counter, 24 bits; every call is far shorter than a wrap.
        let elapsed = before.wrapping_sub(after) & 0x00FF_FFFF;
        if let Some(t) = self.ticks.get_mut(what as usize) {
            *t += u64::from(elapsed);
        }
        let _ = &self.syst;
        r
    }
}

static mut BUFFERS: Buffers = Buffers::new();

/// Logs one event: its type and ids.
fn log_event(ev: &agui_stream::Event<'_>, frame: &agui_stream::FrameInfo) {
    #[cfg(feature = "defmt")]
    defmt::info!(
        "#{=u64} {=str} thread={} run={} message={} toolCall={} step={}",
        frame.index,
        ev.event_type().as_str(),
        ev.thread_id(),
        ev.run_id(),
        ev.message_id(),
        ev.tool_call_id(),
        ev.step_name(),
    );
    #[cfg(not(feature = "defmt"))]
    let _ = (ev, frame);
}

fn stage_name(index: u8) -> &'static str {
    Stage::ALL
        .into_iter()
        .find(|s| s.index() == usize::from(index))
        .map_or("?", Stage::reference_name)
}

fn print_report(end: &End, message: &dyn fmt::Display) {
    match end {
        End::Summary {
            run,
            complete,
            events,
            bytes,
        } => say!(
            "  end: {events} events, {bytes} bytes; run {run:?}; {}",
            if *complete { "complete" } else { "INCOMPLETE" }
        ),
        End::Error(e) => say!(
            "  end: error at frame {} ({}): {message}",
            e.frame,
            e.stage.reference_name()
        ),
    }
}

fn print_outcome(o: &Outcome) {
    let _ = write!(Text, "  events:");
    for (ty, n) in EventType::ALL.iter().zip(o.by_type) {
        if n > 0 {
            let _ = write!(Text, " {}={n}", ty.as_str());
        }
    }
    say!("");
    match o.verdict {
        0 => say!("  verdict: valid, complete"),
        1 => say!("  verdict: valid, incomplete"),
        _ => say!(
            "  verdict: invalid at frame {} ({})",
            o.error_frame,
            stage_name(o.error_stage)
        ),
    }
    say!(
        "  rewriter: {} bytes in, {} out, {} events, {} forwarded, {} encoded, {} violations, {} repairs, {} streamed",
        o.bytes_in,
        o.bytes_out,
        o.events,
        o.forwarded,
        o.encoded,
        o.violations,
        o.repairs,
        o.streamed
    );
    say!("  output fnv1a64: {:016x}", o.hash);
}

/// Counts down `n` iterations of a two-instruction loop.
#[inline(never)]
fn spin(n: u32) {
    // SAFETY: touches one register only.
    unsafe {
        core::arch::asm!(
            "2:",
            "subs {0}, {0}, #1",
            "bne 2b",
            inout(reg) n => _,
            options(nomem, nostack),
        );
    }
}

#[entry]
fn main() -> ! {
    let status = firmware();
    debug::exit(if status { EXIT_SUCCESS } else { EXIT_FAILURE });
    loop {
        cortex_m::asm::nop();
    }
}

fn firmware() -> bool {
    // The linker's symbols: only their addresses are taken.
    let (heap, stack_top) = (
        core::ptr::addr_of!(__sheap) as usize,
        core::ptr::addr_of!(_stack_start) as usize,
    );
    paint(heap, sp() - GUARD);
    // SAFETY: the only reference to the buffers, taken once.
    let bufs: &'static mut Buffers = unsafe { &mut *core::ptr::addr_of_mut!(BUFFERS) };
    let mut ok = true;
    say!(
        "agui-stream on a Cortex-M4, {} configuration: pushes of {} bytes",
        run::caps::NAME,
        run::PIECE
    );
    let expected = &expected::EXPECTED;
    let mut total_bytes = 0u64;
    for ((name, bytes), want) in run::STREAMS.iter().zip(expected) {
        say!("{name} ({} bytes)", bytes.len());
        total_bytes += bytes.len() as u64;
        let got = run::run(bytes, bufs, &mut Plain, &mut log_event, &mut print_report);
        match got {
            Ok(o) => {
                print_outcome(&o);
                if o == *want {
                    say!("  as expected");
                } else {
                    say!(
                        "  MISMATCH: expected verdict {} hash {:016x}",
                        want.verdict,
                        want.hash
                    );
                    ok = false;
                }
            }
            Err(e) => {
                say!("  FAILED: {e}");
                ok = false;
            }
        }
    }
    let low = lowest_touched(heap, stack_top);
    let stack_used = stack_top - low;

    // Stack of each call.
    let mut stack = Stack::default();
    for ((_, bytes), want) in run::STREAMS.iter().zip(expected) {
        let o = run::run(bytes, bufs, &mut stack, &mut |_, _| {}, &mut |_, _| {});
        ok &= o.is_ok_and(|o| o == *want);
    }

    // Time of each call, SysTick on the core clock.
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        say!("FAILED: no peripherals");
        return false;
    };
    let mut syst = peripherals.SYST;
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(0x00FF_FFFF);
    syst.clear_current();
    syst.enable_counter();
    // The cycle counter, to see whether QEMU models it.
    let mut dcb = peripherals.DCB;
    let mut dwt = peripherals.DWT;
    dcb.enable_trace();
    dwt.enable_cycle_counter();
    let cyc0 = cortex_m::peripheral::DWT::cycle_count();
    let t0 = cortex_m::peripheral::SYST::get_current();
    const SPIN: u32 = 1_000_000;
    spin(SPIN);
    let t1 = cortex_m::peripheral::SYST::get_current();
    let cyc1 = cortex_m::peripheral::DWT::cycle_count();
    let spin_ticks = t0.wrapping_sub(t1) & 0x00FF_FFFF;
    let mut ticks = Ticks {
        syst,
        ticks: [0; 4],
    };
    for ((_, bytes), want) in run::STREAMS.iter().zip(expected) {
        let o = run::run(bytes, bufs, &mut ticks, &mut |_, _| {}, &mut |_, _| {});
        ok &= o.is_ok_and(|o| o == *want);
    }

    say!("measures:");
    say!(
        "  stack high-water mark of the whole program: {stack_used} bytes (RAM for the stack: {} bytes free below it)",
        low - heap
    );
    say!(
        "  stack below the caller: pipeline push {} bytes, finish {}; rewriter push {} bytes, finish {}{}",
        stack.worst[Call::PipelinePush as usize],
        stack.worst[Call::PipelineFinish as usize],
        stack.worst[Call::RewriterPush as usize],
        stack.worst[Call::RewriterFinish as usize],
        if stack.overflow {
            " (WINDOW EXCEEDED)"
        } else {
            ""
        }
    );
    ok &= !stack.overflow;
    say!(
        "  DWT CYCCNT over {} loop instructions: {} (0: QEMU does not model the cycle counter)",
        2 * SPIN,
        cyc1.wrapping_sub(cyc0)
    );
    say!(
        "  SysTick over {} loop instructions: {} ticks",
        2 * SPIN,
        spin_ticks
    );
    let pipeline =
        ticks.ticks[Call::PipelinePush as usize] + ticks.ticks[Call::PipelineFinish as usize];
    let rewriter =
        ticks.ticks[Call::RewriterPush as usize] + ticks.ticks[Call::RewriterFinish as usize];
    say!(
        "  SysTick over {total_bytes} input bytes: pipeline {pipeline} ticks, rewriter {rewriter} ticks"
    );
    if spin_ticks > 0 {
        // Instructions per tick from the loop; per byte from the runs.
        let per_byte = |t: u64| t * u64::from(2 * SPIN) * 100 / u64::from(spin_ticks) / total_bytes;
        let (p, r) = (per_byte(pipeline), per_byte(rewriter));
        say!(
            "  instructions per input byte (-icount: SysTick counts instructions): pipeline {}.{:02}, rewriter {}.{:02}",
            p / 100,
            p % 100,
            r / 100,
            r % 100
        );
    }
    say!(
        "{}",
        if ok {
            "all outcomes as expected"
        } else {
            "FAILED"
        }
    );
    ok
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    say!("panic: {info}");
    debug::exit(EXIT_FAILURE);
    loop {
        cortex_m::asm::nop();
    }
}

#[exception]
unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
    say!("hard fault at pc {:#010x}", frame.pc());
    debug::exit(EXIT_FAILURE);
    loop {
        cortex_m::asm::nop();
    }
}

#[exception]
unsafe fn DefaultHandler(irq: i16) {
    say!("unexpected exception {irq}");
    debug::exit(EXIT_FAILURE);
}
