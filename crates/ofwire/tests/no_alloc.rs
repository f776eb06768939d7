//! The hot paths must not touch the heap: PACKET_IN view, FLOW_MOD and
//! PACKET_OUT encode into a buffer with room. Counted with a wrapping
//! global allocator, so this is a behavioural check, not a timing one.

use ofwire::hot::{write_flow_mod10, write_flow_mod13, write_packet_out10, write_packet_out13, PacketInView};
use ofwire::oxm::Oxm;
use ofwire::{v10, v13, MacAddr};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // Only the measuring thread's allocations count: the test harness's
    // own threads may allocate at any time (CI saw 4 in one run).
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn note_allocation() {
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note_allocation();
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        note_allocation();
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations this thread made while running `f`.
fn allocations_during(f: impl FnOnce()) -> usize {
    let before = ALLOCS.load(Ordering::SeqCst);
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCS.load(Ordering::SeqCst) - before
}

#[test]
fn hot_paths_do_not_allocate() {
    let corpus = ofwire::corpus::all();
    let pi10 = corpus
        .iter()
        .find(|(n, _)| n == "v10_packet_in")
        .unwrap()
        .1
        .to_bytes()
        .unwrap();
    let pi13 = corpus
        .iter()
        .find(|(n, _)| n == "v13_packet_in")
        .unwrap()
        .1
        .to_bytes()
        .unwrap();
    let frame = ofwire::corpus::sample_frame();
    let mut out = Vec::with_capacity(64 * 1024);
    let fm13 = v13::FlowMod::add(100);
    let fields = [Oxm::InPort(1), Oxm::EthDst(MacAddr([2, 0, 0, 0, 0, 2]), None)];
    let actions13 = [
        v13::Action::Output { port: 2, max_len: 0 },
        v13::Action::SetField(Oxm::TcpDst(80)),
    ];
    let insts = [
        v13::Instruction::ApplyActions(&actions13[..]),
        v13::Instruction::GotoTable(1),
    ];
    let fm10 = v10::FlowMod {
        match_: v10::Match::all(),
        cookie: 0,
        command: v10::FlowModCommand::Add,
        idle_timeout: 10,
        hard_timeout: 0,
        priority: 1,
        buffer_id: v10::NO_BUFFER,
        out_port: v10::port::NONE,
        flags: 0,
        actions: Vec::new(),
    };
    let actions10 = [
        v10::Action::Output { port: 2, max_len: 0 },
        v10::Action::SetDlDst(MacAddr([2, 0, 0, 0, 0, 9])),
    ];
    let n = allocations_during(|| {
        for i in 0..1000u32 {
            let a = PacketInView::parse(&pi10).unwrap();
            let b = PacketInView::parse(&pi13).unwrap();
            assert_eq!((a.in_port, b.in_port), (3, 3));
            out.clear();
            write_flow_mod13(&mut out, i, &fm13, &fields, &insts).unwrap();
            write_flow_mod10(&mut out, i, &fm10, &actions10).unwrap();
            write_packet_out13(&mut out, i, v13::NO_BUFFER, 1, &actions13, &frame).unwrap();
            write_packet_out10(&mut out, i, v10::NO_BUFFER, 1, &actions10, &frame).unwrap();
        }
    });
    assert_eq!(n, 0, "hot paths allocated {n} times in 1000 iterations");
    // And the check itself can see allocations.
    assert!(allocations_during(|| drop(ofwire::decode(&pi13).unwrap())) > 0);
}
