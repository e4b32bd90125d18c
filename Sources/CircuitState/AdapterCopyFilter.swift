/// Counts an advert heard by several adapters once (issue 32; docs/fusion.md, "Several adapters").
///
/// Each advert, keyed by its address and payload bytes, is owned by the adapter that heard it
/// first. The owner's copies always pass, so a beacon's own repeats are never dropped. Another
/// adapter's copy is dropped while the owner has passed one within `window`, unless it is at least
/// `handoverDB` stronger: then it passes and that adapter becomes the owner, so the engine follows
/// the strongest adapter. When the owner falls silent for `window` (its dongle died, it went out of
/// range), the next copy from any adapter passes and takes over. The first copy is never delayed:
/// the filter only ever passes or drops a copy at once. "Within `window`" counts both ways: a copy
/// stamped a little before the owner's last (read by another thread, handed over later) is a copy.
///
/// The table has a fixed number of slots, allocated once; `admit` allocates nothing. Keys are
/// hashed with Swift's per-process random seed, so nobody on the air can aim adverts at one slot.
/// A full neighbourhood evicts its oldest entry (counted): an evicted advert's next copy from any
/// adapter passes, so overload fails open, to an extra copy for the engine, never a lost one.
public struct AdapterCopyFilter: Sendable {
    public struct Counters: Hashable, Sendable {
        /// Copies passed to the engine.
        public var passed: UInt64 = 0
        /// Copies dropped because another adapter passed the same advert within the window.
        public var dropped: UInt64 = 0
        /// Copies that passed because they were stronger than the owner's, moving the advert to
        /// their adapter.
        public var handovers: UInt64 = 0
        /// Live entries overwritten for want of a free slot.
        public var evictions: UInt64 = 0
    }

    private struct Slot {
        var key: Int = 0
        var lastPassed: Int64 = .min
        var used = false
        var owner: UInt16 = 0
        var rssi: Int16 = 0
    }

    /// How long an owner's copy keeps other adapters' copies out, µs.
    public let window: Int64
    /// How much stronger (dB) another adapter's copy must be to take an advert over.
    public let handoverDB: Int16
    public private(set) var counters = Counters()
    private var slots: [Slot]
    private let mask: Int

    /// Slots looked at for one key, from its home slot on.
    static let probes = 8

    /// `capacity` is rounded up to a power of two (at least 16).
    public init(capacity: Int = 4096, window: Int64 = 500_000, handoverDB: Int = 3) {
        var size = 16
        while size < capacity, size < 1 << 20 { size <<= 1 }
        slots = Array(repeating: Slot(), count: size)
        mask = size - 1
        self.window = max(1, window)
        self.handoverDB = Int16(clamping: max(0, handoverDB))
    }

    public var capacity: Int { slots.count }

    /// An advert's key: its address and payload bytes, hashed with the process's seed. Any thread
    /// may compute it (a scanner's, before the hub's loop calls `admit`).
    public static func key(address: UInt64, payload: UnsafeRawBufferPointer) -> Int {
        var hasher = Hasher()
        hasher.combine(address)
        hasher.combine(bytes: payload)
        return hasher.finalize()
    }

    /// True when this copy goes to the engine. `adapter` names the adapter that heard it;
    /// `rssi` nil counts as the weakest; `now` is engine time, µs.
    public mutating func admit(
        address: UInt64, payload: UnsafeRawBufferPointer, adapter: UInt16, rssi: Int8?, now: Int64
    ) -> Bool {
        admit(key: Self.key(address: address, payload: payload), adapter: adapter, rssi: rssi, now: now)
    }

    /// `admit` for an advert whose `key` was computed already.
    public mutating func admit(key: Int, adapter: UInt16, rssi: Int8?, now: Int64) -> Bool {
        let strength = Int16(rssi ?? -128)
        let home = key & mask
        var free: Int?
        var oldest = home
        for step in 0..<Self.probes {
            let index = (home + step) & mask
            let slot = slots[index]
            let live = slot.used && isLive(slot, now: now)
            if slot.used, slot.key == key {
                return decide(index, adapter: adapter, strength: strength, live: live, now: now)
            }
            if !live {
                if free == nil { free = index }
            } else if slot.lastPassed < slots[oldest].lastPassed {
                oldest = index
            }
        }
        let index: Int
        if let free {
            index = free
        } else {
            index = oldest
            counters.evictions += 1
        }
        slots[index] = Slot(key: key, lastPassed: now, used: true, owner: adapter, rssi: strength)
        counters.passed += 1
        return true
    }

    /// Passed less than `window` before or after `now`: two adapters' threads stamp their copies
    /// as they read them, and the later stamp may reach the hub first. Time that went back further
    /// (a looped replay) finds the entry not live. Capture times may lie anywhere in Int64's
    /// range: the difference is checked, never trapped.
    private func isLive(_ slot: Slot, now: Int64) -> Bool {
        let (age, overflow) = now.subtractingReportingOverflow(slot.lastPassed)
        return !overflow && age > -window && age < window
    }

    private mutating func decide(_ index: Int, adapter: UInt16, strength: Int16, live: Bool, now: Int64) -> Bool {
        let slot = slots[index]
        let takesOver = live && slot.owner != adapter && Int(strength) >= Int(slot.rssi) + Int(handoverDB)
        guard slot.owner == adapter || !live || takesOver else {
            counters.dropped += 1
            return false
        }
        if takesOver { counters.handovers += 1 }
        slots[index].owner = adapter
        slots[index].rssi = strength
        slots[index].lastPassed = now
        counters.passed += 1
        return true
    }
}
