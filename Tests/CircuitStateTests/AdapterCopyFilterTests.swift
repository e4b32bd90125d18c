import CircuitState
import PropertyBased
import Testing

/// One copy of an advert as an adapter hears it; `tick` is a time in milliseconds.
struct HeardCopy: Sendable, CustomStringConvertible {
    var advert: Int
    var adapter: UInt16
    var rssi: Int8?
    var tick: Int

    var time: Int64 { Int64(tick) * 1_000 }
    var description: String { "advert \(advert) on \(adapter) at \(tick) ms, \(rssi.map(String.init) ?? "no") dBm" }
}

private let copies = zip(Gen.int(in: 0...5), Gen.int(in: 0...2), Gen.int(in: -95...(-40)).optional, Gen.int(in: 0...4))
    .map { advert, adapter, rssi, step in
        HeardCopy(advert: advert, adapter: UInt16(adapter), rssi: rssi.map { Int8($0) }, tick: step)
    }

@Suite struct AdapterCopyFilterTests {
    /// Advert `n`'s payload: the same bytes under two addresses are two adverts.
    static func admit(
        _ filter: inout AdapterCopyFilter, advert: Int, address: UInt64 = 0xC0FF_EE00_0001, adapter: UInt16,
        rssi: Int8?, at millis: Int64
    ) -> Bool {
        admit(&filter, advert: advert, address: address, adapter: adapter, rssi: rssi, micros: millis * 1_000)
    }

    static func admit(
        _ filter: inout AdapterCopyFilter, advert: Int, address: UInt64 = 0xC0FF_EE00_0001, adapter: UInt16,
        rssi: Int8?, micros: Int64
    ) -> Bool {
        let payload: [UInt8] = [0x34, 0x12, 0x01, UInt8(advert & 0xFF), UInt8(advert >> 8), 0x05, 0x00, 0x0A]
        return payload.withUnsafeBytes { bytes in
            filter.admit(address: address, payload: bytes, adapter: adapter, rssi: rssi, now: micros)
        }
    }

    @Test func theOwnersCopiesPassAndAnotherAdaptersAreDroppedUntilTheOwnerFallsSilent() {
        var filter = AdapterCopyFilter(window: 500_000)
        #expect(Self.admit(&filter, advert: 1, adapter: 0, rssi: -60, at: 0), "the first copy passes at once")
        #expect(!Self.admit(&filter, advert: 1, adapter: 1, rssi: -61, at: 5), "a second adapter's copy")
        #expect(Self.admit(&filter, advert: 1, adapter: 0, rssi: -70, at: 100), "the owner's repeat")
        #expect(Self.admit(&filter, advert: 1, adapter: 0, rssi: -70, at: 100), "even at the same instant")
        #expect(!Self.admit(&filter, advert: 1, adapter: 1, rssi: -68, at: 599), "within 0.5 s of the owner's")
        // The owner (adapter 0) falls silent: 0.5 s after its last copy, adapter 1's copy passes
        // and adapter 1 owns the advert.
        #expect(Self.admit(&filter, advert: 1, adapter: 1, rssi: -68, at: 600))
        #expect(!Self.admit(&filter, advert: 1, adapter: 0, rssi: -67, at: 650), "the old owner is now the copy")
        let counters = filter.counters
        #expect(counters.passed == 4 && counters.dropped == 3 && counters.handovers == 0 && counters.evictions == 0)
    }

    @Test func aCopyThreeDecibelsStrongerTakesTheAdvertOver() {
        var filter = AdapterCopyFilter(window: 500_000, handoverDB: 3)
        #expect(Self.admit(&filter, advert: 7, adapter: 0, rssi: -80, at: 0))
        #expect(!Self.admit(&filter, advert: 7, adapter: 1, rssi: -78, at: 10), "2 dB stronger is noise")
        #expect(Self.admit(&filter, advert: 7, adapter: 1, rssi: -77, at: 20), "3 dB stronger: the engine hears it")
        #expect(!Self.admit(&filter, advert: 7, adapter: 0, rssi: -80, at: 30), "adapter 1 owns it now")
        #expect(Self.admit(&filter, advert: 7, adapter: 1, rssi: -90, at: 40), "the owner's copies pass, however weak")
        #expect(Self.admit(&filter, advert: 7, adapter: 0, rssi: -80, at: 50), "and are what a stronger one beats")
        #expect(filter.counters.handovers == 2 && filter.counters.dropped == 2)
        // No RSSI counts as the weakest: it never takes an advert over, and anything beats it.
        var quiet = AdapterCopyFilter()
        #expect(Self.admit(&quiet, advert: 1, adapter: 0, rssi: nil, at: 0))
        #expect(!Self.admit(&quiet, advert: 1, adapter: 2, rssi: nil, at: 1))
        #expect(Self.admit(&quiet, advert: 1, adapter: 2, rssi: -120, at: 2))
    }

    @Test func advertsDifferingInAddressOrPayloadAreIndependent() {
        var filter = AdapterCopyFilter()
        #expect(Self.admit(&filter, advert: 1, adapter: 0, rssi: -60, at: 0))
        #expect(Self.admit(&filter, advert: 2, adapter: 1, rssi: -60, at: 1), "another payload (a new sequence)")
        #expect(Self.admit(&filter, advert: 1, address: 0xC0FF_EE00_0002, adapter: 1, rssi: -60, at: 2))
        #expect(!Self.admit(&filter, advert: 1, adapter: 1, rssi: -60, at: 3))
        #expect(!Self.admit(&filter, advert: 2, adapter: 0, rssi: -60, at: 4))
    }

    /// Capture time can go back by more than the window (a looped replay): an entry from "the
    /// future" keeps nothing out.
    @Test func timeGoingFarBackNeverDropsACopy() {
        var filter = AdapterCopyFilter()
        #expect(Self.admit(&filter, advert: 1, adapter: 0, rssi: -60, at: 10_000))
        #expect(Self.admit(&filter, advert: 1, adapter: 1, rssi: -70, at: 0))
        #expect(!Self.admit(&filter, advert: 1, adapter: 0, rssi: -70, at: 100))
    }

    /// Two adapters' threads stamp their copies as they read them, and the hub may take the later
    /// stamp first: a copy stamped a little before the owner's last is still a copy.
    @Test func aCopyStampedJustBeforeTheOwnersIsStillACopy() {
        var filter = AdapterCopyFilter()
        #expect(Self.admit(&filter, advert: 1, adapter: 0, rssi: -60, at: 1_000))
        #expect(!Self.admit(&filter, advert: 1, adapter: 1, rssi: -61, at: 998))
        #expect(!Self.admit(&filter, advert: 1, adapter: 1, rssi: -61, at: 501))
        #expect(Self.admit(&filter, advert: 1, adapter: 1, rssi: -61, at: 500), "a window before: not live")
    }

    /// Capture times at Int64's ends and the largest handover margin: no arithmetic traps, and the
    /// rule holds (an entry from a time that cannot be subtracted keeps nothing out).
    @Test func extremeTimesAndMarginsNeitherTrapNorDropFirstCopies() {
        var filter = AdapterCopyFilter(window: .max, handoverDB: .max)
        #expect(Self.admit(&filter, advert: 1, adapter: 0, rssi: 127, micros: .min))
        #expect(Self.admit(&filter, advert: 1, adapter: 1, rssi: 127, micros: .max), "max − min overflows: not live")
        #expect(!Self.admit(&filter, advert: 1, adapter: 0, rssi: 127, micros: .max), "adapter 1 owns it now")
        #expect(Self.admit(&filter, advert: 1, adapter: 0, rssi: -128, micros: .min), "time went back")
        #expect(!Self.admit(&filter, advert: 1, adapter: 1, rssi: 127, micros: .min), "no RSSI beats 32767 dB")
    }

    /// A flood of distinct adverts (a million spoofed addresses) stays in the fixed table: every
    /// one passes (each is a first copy), the oldest entries are evicted and counted, and real
    /// adverts keep being filtered between the flood's copies.
    @Test func aFloodOfDistinctAdvertsStaysInTheTableAndFailsOpen() {
        var filter = AdapterCopyFilter(capacity: 1024)
        var passed = 0
        for index in 0..<1_000_000 {
            let time = Int64(index) // a million a second
            let address = UInt64(index) + 1_000_000
            if Self.admit(&filter, advert: 1, address: address, adapter: 0, rssi: -50, micros: time) {
                passed += 1
            }
            if index % 1000 == 0 {
                #expect(Self.admit(&filter, advert: 9, adapter: 0, rssi: -60, micros: time))
                _ = Self.admit(&filter, advert: 9, adapter: 1, rssi: -61, micros: time)
            }
        }
        #expect(passed == 1_000_000)
        #expect(filter.capacity == 1024)
        #expect(filter.counters.evictions > 900_000)
        #expect(filter.counters.dropped > 500, "the real advert's second copies were mostly still caught")
    }

    /// Against a model with unlimited memory (few adverts, so the table never evicts): the same
    /// verdict for every copy. The model states the rule: per advert, the adapter of the last copy
    /// passed owns it; a copy passes when it is the first, from the owner, 0.5 s or more after the
    /// last passed copy, or at least 3 dB stronger than it. (Time going back is its own test: an
    /// entry that was not live may be forgotten, which the model cannot know.)
    @Test func agreesWithTheRuleAsAModel() async {
        await propertyCheck(count: 300, input: copies.array(of: 1...60)) { heard in
            var filter = AdapterCopyFilter(capacity: 64, window: 500_000, handoverDB: 3)
            var model: [Int: (owner: UInt16, rssi: Int, time: Int64)] = [:]
            var time: Int64 = 0
            for copy in heard {
                time += copy.time * 100 // steps of 0 to 400 ms
                let strength = Int(copy.rssi ?? -128)
                let expected: Bool
                if let last = model[copy.advert] {
                    let live = time - last.time < 500_000 && time - last.time > -500_000
                    expected = !live || last.owner == copy.adapter || strength >= last.rssi + 3
                } else {
                    expected = true
                }
                if expected { model[copy.advert] = (copy.adapter, strength, time) }
                let actual = Self.admit(
                    &filter, advert: copy.advert, adapter: copy.adapter, rssi: copy.rssi, micros: time)
                #expect(actual == expected, "\(copy) at \(time) µs")
            }
            #expect(filter.counters.evictions == 0)
        }
    }
}
