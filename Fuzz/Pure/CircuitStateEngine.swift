// Target `circuit-state`: the fusion engine driven by the input: a configuration, then beacon
// frames (v1 and v2, any mode byte, sequence, TTL and RSSI, from a handful of addresses), venue
// API fetches (known, unknown and evacuation modes), failures, restores, reconfigurations and
// clears, at times that mostly advance and sometimes go back. After every step the driver
// publishes the way the daemon does (deadlines first, then the step's time) and checks:
// - the override table never holds more than its bound;
// - published times never go backwards;
// - an evacuation is never hidden: when an active override or the venue API's effective mode is
//   an evacuation, or the venue API's evacuation is latched, the published mode is evacuation;
// - stale data never looks fresh: a published venue API mode is the latched evacuation or a fetch
//   younger than staleAfter, never a restored one;
// - a beacon decision publishes the most severe active override's mode.
import BLEPayload
import CircuitState
import Glibc

/// `FUZZ_TRACE=1`: print every step and published state (to turn a crasher into a unit test).
private let tracing = getenv("FUZZ_TRACE") != nil

private func trace(_ line: @autoclosure () -> String) {
    if tracing { fputs(line() + "\n", stderr) }
}

private let remoteNames: [String?] = [
    nil, "", "normal", "GREEN", "yellow", "vsc", "SC", "red_flag", "EVACUATION", "evacuation", "bogus", "Evacuatio",
]

private func configuration(_ input: inout FuzzInput) -> FusionConfiguration {
    let policy = Policy.allCases[Int(input.u8()) % Policy.allCases.count]
    let zones: Set<UInt16> = input.bool() ? [1, 2] : []
    let allow =
        input.u8() % 4 == 0 ? AllowList(addresses: [BluetoothAddress(rawValue: 1)], sourceIDs: [7]) : AllowList()
    let hold = FusionConfiguration.deescalationHoldRange
    return FusionConfiguration(
        policy: policy, minRSSI: -Int(input.u8() % 128), zones: zones, allow: allow,
        maxTTL: Int64(input.u8()) * 1_000_000, maxEntries: Int(input.u8() % 10),
        staleAfter: 1 + Int64(input.u16()) * 1_000,
        maxDistance: input.bool() ? Double(input.u8()) : nil,
        deescalationHold: hold.lowerBound + Int64(input.u16()) * 150 % (hold.upperBound - hold.lowerBound))
}

private func snapshot(_ input: inout FuzzInput) -> RemoteSnapshot {
    RemoteSnapshot(
        globalMode: remoteNames[Int(input.u8()) % remoteNames.count],
        mode: remoteNames[Int(input.u8()) % remoteNames.count],
        message: input.bool() ? "race control" : nil)
}

/// What the driver knows of the venue API's side, kept independently of the engine.
private struct RemoteModel {
    var latched = false
    var lastSuccess: Int64?
    var restored = false
    var latestMode: TrackMode?

    mutating func fetched(_ snapshot: RemoteSnapshot, at time: Int64) {
        lastSuccess = time
        restored = false
        latestMode = snapshot.trackMode
        if let mode = snapshot.trackMode { latched = mode == .evacuation }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCircuitState(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let initial = configuration(&input)
    trace("configuration \(initial)")
    var engine = FusionEngine(configuration: initial)
    var model = RemoteModel()
    var time: Int64 = Int64(input.u32())
    var lastPublished = Int64.min
    var steps = 0
    while !input.isAtEnd && steps < 2_000 {
        steps += 1
        let step = input.u8()
        if step & 0x80 != 0 {
            time = time &- Int64(input.u8()) * 10_000 // an input stamped earlier than the engine's clock
        } else {
            let (advanced, overflow) = time.addingReportingOverflow(Int64(input.u16()) * 1_000)
            if !overflow { time = advanced }
        }
        time = max(time, 0)
        let now = max(time, engine.clock)
        switch step & 0x0F {
        case 0...7:
            let address = BluetoothAddress(rawValue: UInt64(input.u8() % 12))
            let v2 = input.bool()
            let signal = GeoRacingSignal(
                version: v2 ? .v2 : .v1, zone: UInt16(input.u8() % 4), mode: GeoRacingMode(rawValue: input.u8() % 6),
                flags: 0, sequence: UInt16(input.u8()) << (input.bool() ? 8 : 0), ttl: input.u8() % 40,
                sourceID: UInt32(input.u8() % 10))
            let rssi: Int8? = input.bool() ? Int8(bitPattern: input.u8()) : nil
            let txPower: Int8? = input.bool() ? -4 : nil
            let outcome = engine.ingest(signal, address: address, rssi: rssi, txPower: txPower, at: time)
            trace("ingest \(signal) from \(address) rssi \(String(describing: rssi)) at \(time): \(outcome)")
        case 8, 9:
            let fetched = snapshot(&input)
            engine.remoteFetched(fetched, at: time)
            trace("remoteFetched \(fetched) at \(time)")
            model.fetched(fetched, at: now)
        case 10:
            engine.remoteFailed(at: time, reason: "refused")
        case 11:
            let saved = snapshot(&input)
            let latched: RemoteSnapshot? = input.bool() ? RemoteSnapshot(globalMode: "evacuation") : nil
            let fetchedAt = now - Int64(input.u16()) * 1_000
            engine.restoreRemote(saved, fetchedAt: fetchedAt, latchedSnapshot: latched, at: time)
            trace("restoreRemote \(saved) fetchedAt \(fetchedAt) latched \(String(describing: latched)) at \(time)")
            model.lastSuccess = fetchedAt
            model.restored = true
            model.latched = latched != nil
            model.latestMode = saved.trackMode
        case 12:
            let revised = configuration(&input)
            engine.reconfigure(revised)
            trace("reconfigure \(revised)")
        case 13:
            engine.clearOverrides()
        default:
            break
        }
        // What evaluateDeadlines(before:) does, one deadline at a time, so that each state is
        // checked against the engine as it was when it was published.
        var instants: [Int64] = []
        while let deadline = engine.nextDeadline(after: engine.clock), deadline < time, instants.count < 64 {
            instants.append(deadline)
            publish(engine.evaluate(at: deadline))
        }
        publish(engine.evaluate(at: time))
        func publish(_ state: PublishedState) {
            trace("published \(state.time): \(state.decision) override \(String(describing: state.override))")
            check(state, engine, model, after: lastPublished)
            lastPublished = state.time
        }
    }
    return 0
}

private func check(_ state: PublishedState, _ engine: FusionEngine, _ model: RemoteModel, after previous: Int64) {
    let limit = max(engine.configuration.maxEntries, 1)
    fuzzCheck(engine.overrideCount <= limit, "\(engine.overrideCount) overrides over the bound \(limit)")
    fuzzCheck(state.time >= previous, "published at \(state.time) after \(previous)")
    let overrides = engine.activeOverrides(at: state.time)
    let beaconEvacuation = overrides.contains { $0.mode == .evacuation }
    let remoteEvacuation = state.remote?.mode == .evacuation
    if beaconEvacuation || remoteEvacuation || model.latched {
        fuzzCheck(
            state.mode == .evacuation,
            "evacuation hidden: published \(state.decision) (beacon \(beaconEvacuation), remote \(remoteEvacuation), "
                + "latched \(model.latched))")
    }
    fuzzCheck(
        state.remote?.isLatched ?? false == model.latched, "latch \(String(describing: state.remote)) vs \(model)")
    if state.source == .remote && !model.latched {
        fuzzCheck(!model.restored, "a restored remote state published as fresh: \(state.decision)")
        guard let success = model.lastSuccess else {
            fuzzCheck(false, "a remote decision without any fetch")
            return
        }
        let (staleAt, overflow) = success.addingReportingOverflow(engine.configuration.staleAfter)
        fuzzCheck(
            overflow || state.time < staleAt, "stale remote state published at \(state.time), stale at \(staleAt)")
        fuzzCheck(
            state.mode == model.latestMode,
            "remote decision \(state.decision), fetched \(String(describing: model.latestMode))")
    }
    if state.source == .beacon {
        let most = overrides.map(\.mode).max()
        fuzzCheck(
            state.mode == most,
            "beacon decision \(state.decision), most severe active override \(String(describing: most))")
        fuzzCheck(
            state.override?.mode == state.mode,
            "override \(String(describing: state.override?.mode)) published as \(state.decision)")
    }
}

func fuzzSeeds(_ sources: SeedSources) -> [[UInt8]] {
    let config: [UInt8] = [0, 0, 90, 120, 4, 0x3A, 0x98, 0, 0, 10]
    let evacuationFrame: [UInt8] = [0x00, 0x00, 0x10, 3, 0, 1, 3, 0, 5, 20, 1, 0xC4, 0]
    let remoteEvacuation: [UInt8] = [0x08, 0x00, 0x10, 8, 0, 1]
    let redFlag: [UInt8] = [0x01, 0x00, 0x20, 3, 1, 0, 2, 1, 5, 30, 0, 0]
    let clearing: [UInt8] = [0x02, 0x10, 0x00, 3, 1, 0, 0, 1, 9, 0, 0, 0]
    return [
        config + evacuationFrame + remoteEvacuation + redFlag + clearing,
        config + redFlag + [0x0C] + config + clearing + [0x0B, 2, 2, 1, 0, 100],
        [2] + config + remoteEvacuation + [0x88, 50] + [0x09, 0x00, 0x20, 2, 2, 0] + evacuationFrame,
    ]
}
