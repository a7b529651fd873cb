//! The armed set below and above its index threshold.
use super::*;

/// Entry `i`: track `i` parked at node 7 on subscription `i`, or with open work there.
fn arm(armed: &mut Armed, i: u32, work: bool) {
    armed.push(Holder::Track(TrackId(i)), 7, 1, None);
    armed.push_wait(Wait {
        arm: 7,
        source: if work { EventSource::UserTask } else { sub(i) },
        fired: 0,
        key: None,
    });
}

/// A signal subscription, numbered far from the one resubscribed to (9).
fn sub(i: u32) -> EventSource {
    EventSource::Hub(1_000 + u64::from(i))
}

#[test]
fn the_index_costs_a_parked_instance_nothing() {
    assert_eq!(
        std::mem::size_of::<Armed>(),
        std::mem::size_of::<Vec<ArmedEntry>>()
    );
}

#[test]
fn lookups_agree_below_and_above_the_index_threshold() {
    for n in [1, MANY, MANY + 1, 1_000] {
        let n = n as u32;
        let mut armed = Armed::default();
        for i in 0..n {
            arm(&mut armed, i, i % 2 == 1);
        }
        assert_eq!(armed.iter().count(), n as usize);
        // Arming order, whatever the store.
        let holders: Vec<Holder> = armed.iter().map(|e| e.holder).collect();
        let expected: Vec<Holder> = (0..n).map(|i| Holder::Track(TrackId(i))).collect();
        assert_eq!(holders, expected, "{n}");
        // Every subscription found at its own entry; open work the lowest track first.
        let (e, w) = armed.find(sub(0)).unwrap();
        assert_eq!((armed.entry(e).holder, w), (Holder::Track(TrackId(0)), 0));
        assert!(armed.find(sub(1)).is_none(), "track 1 has open work");
        if n > 1 {
            let (e, track) = armed.find_work(7).unwrap();
            assert_eq!(
                (track, armed.entry(e).holder),
                (TrackId(1), Holder::Track(track))
            );
            assert!(armed.find_work(8).is_none());
        }
        // Taken out one by one (flip on dispatch): each then found no more.
        for i in 0..n {
            if i % 2 == 0 {
                let (e, _) = armed.find(sub(i)).unwrap();
                assert_eq!(armed.remove(e).holder, Holder::Track(TrackId(i)));
                assert!(armed.find(sub(i)).is_none());
            } else {
                let (e, track) = armed.find_work(7).unwrap();
                assert_eq!(track, TrackId(i));
                armed.remove(e);
            }
            assert!(armed.holds(Holder::Track(TrackId(i))).is_none());
            assert_eq!(armed.iter().count(), (n - i - 1) as usize);
        }
        assert!(armed.find_work(7).is_none());
    }
}

#[test]
fn taking_a_holder_and_resubscribing_keep_the_index_true() {
    let mut armed = Armed::default();
    for i in 0..100 {
        arm(&mut armed, i, false);
    }
    let taken = armed.take(Holder::Track(TrackId(50))).unwrap();
    assert_eq!(taken.waits[0].source, sub(50));
    assert!(armed.find(sub(50)).is_none());
    assert!(armed.take(Holder::Track(TrackId(50))).is_none());
    let (e, w) = armed.find(sub(60)).unwrap();
    armed.resubscribed(e, w, EventSource::Hub(9), "k".into());
    assert!(armed.find(sub(60)).is_none());
    assert_eq!(armed.find(EventSource::Hub(9)), Some((e, w)));
    assert_eq!(armed.entry(e).waits[w].key.as_deref(), Some("k"));
    assert_eq!(armed.message_catches(), [7]);
    assert!(armed.stale_keys(7, "k").is_empty());
    assert_eq!(armed.stale_keys(7, "moved"), [(e, w, 9)]);
    armed.resubscribed(e, w, EventSource::Hub(10), "moved".into());
    assert!(armed.find(EventSource::Hub(9)).is_none());
    assert!(armed.stale_keys(7, "moved").is_empty());
    assert_eq!(armed.stale_keys(7, "k"), [(e, w, 10)]);
    assert_eq!(armed.fired(e, w), (1, EventSource::Hub(10)));
    // A message wait taken out leaves no catch behind.
    armed.remove(e);
    assert!(armed.message_catches().is_empty());
    assert_eq!(armed.take_all().len(), 98);
    assert!(armed.find(sub(0)).is_none());
    // Empty again, the set is the scanned one.
    arm(&mut armed, 1, false);
    assert_eq!(armed.find(sub(1)), Some((0, 0)));
}
