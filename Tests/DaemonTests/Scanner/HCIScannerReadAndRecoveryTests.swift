import BLEPayload
import BeacondTestSupport
import Foundation
import Glibc
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

@Suite struct HCIScannerReadTests {
    static let beacon: UInt64 = 0xC0_FF_EE_00_00_01

    @Test func everyReportOfAMultiReportEventIsDeliveredThenFlushed() async throws {
        let controller = FakeController()
        let harness = try await HCIHarness.up([controller])
        let before = MonotonicClock.bootMicros()
        controller.inject(
            FakeController.legacyEvent([
                FakeController.report(Self.beacon, rssi: -61, data: FakeController.geoRacingData(zone: 1, sequence: 7)),
                FakeController.report(0x11_22_33_44_55_66, rssi: -90, data: [0x02, 0x01, 0x06]),
                FakeController.report(0x11_22_33_44_55_77, rssi: -70, data: []),
            ]))
        controller.inject(
            FakeController.legacyEvent([FakeController.report(Self.beacon, rssi: -62, data: [0x02, 0x01, 0x04])]))
        #expect(await harness.sink.waitForReports(4))
        #expect(await waitUntil { harness.sink.snapshot.unflushed == 0 })
        let snapshot = harness.sink.snapshot
        #expect(
            snapshot.reports.map(\.address.rawValue) == [
                Self.beacon, 0x11_22_33_44_55_66, 0x11_22_33_44_55_77, Self.beacon,
            ])
        #expect(snapshot.reports.map(\.rssi) == [-61, -90, -70, -62])
        #expect(snapshot.reports[0].data == FakeController.geoRacingData(zone: 1, sequence: 7))
        #expect(snapshot.reports[2].data.isEmpty)
        let after = MonotonicClock.bootMicros()
        #expect(snapshot.bootMicros.allSatisfy { $0 >= before && $0 <= after })
        // Wall-clock stamps for display and recording.
        #expect(snapshot.reports.allSatisfy { abs($0.timestamp - MonotonicClock.wallMicros()) < 60_000_000 })
        #expect(await harness.stop() == nil)
        let counters = harness.backend.counters.snapshot
        #expect(counters.reports == 4)
        #expect(counters.events == 2 + 6) // two reports, six command answers
        #expect(counters.malformed == 0)
    }

    @Test func fragmentedExtendedReportsAreJoined() async throws {
        let controller = FakeController(.extended)
        let harness = try await HCIHarness.up([controller])
        let data = (0..<400).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let long = OwnedAdvertisingReport(
            origin: .extendedReport, kind: .extended,
            properties: ExtendedEventProperties(rawValue: 0),
            address: BluetoothAddress(rawValue: Self.beacon), rssi: -50, sid: 3, data: data)
        let fragments = HCIEventEncoder.extendedFragments(of: long, chunk: 150)
        #expect(fragments.count == 3)
        for (index, fragment) in fragments.enumerated() {
            controller.inject(try HCIEventEncoder.extendedAdvertisingReport([fragment]))
            if index == 0 {
                // Another advertiser between the fragments.
                controller.inject(FakeController.legacyEvent([FakeController.report(0x42, data: [0x02, 0x01, 0x06])]))
            }
        }
        #expect(await harness.sink.waitForReports(2))
        let reports = harness.sink.reports
        #expect(reports.count == 2)
        #expect(reports[0].address.rawValue == 0x42)
        #expect(reports[1].data == data)
        #expect(!reports[1].isTruncated)
        #expect(reports[1].sid == 3)
        #expect(await harness.stop() == nil)
    }

    @Test func truncatedAndMalformedPacketsAreCountedAndSkipped() async throws {
        let controller = FakeController()
        let harness = try await HCIHarness.up([controller])
        controller.inject([0x3E, 0x20, 0x02, 0x01]) // says 32 bytes, carries 2
        controller.injectRaw([0x04, 0x3E]) // no length byte at all
        controller.inject([0x3E, 0x05, 0x02, 0x01, 0x03, 0x00, 0xAA]) // a report cut off inside
        controller.inject([0x0E, 0x01, 0x01]) // a Command Complete without its opcode
        controller.injectRaw([0x02, 0x00, 0x20]) // ACL data: not an event, ignored
        controller.inject(FakeController.legacyEvent([FakeController.report(Self.beacon, data: [0x02, 0x01, 0x06])]))
        #expect(await harness.sink.waitForReports(1))
        #expect(harness.sink.reports.map(\.address.rawValue) == [Self.beacon])
        #expect(await harness.stop() == nil)
        #expect(harness.backend.counters.snapshot.malformed == 4)
        #expect(harness.backend.counters.snapshot.reports == 1)
        // The last one is named, for status.
        #expect(harness.backend.counters.lastMalformed == "Command Complete of 3 bytes, shorter than its 5-byte header")
    }

    @Test func interruptedAndWouldBlockCallsAreRetried() async throws {
        let controller = FakeController()
        let flaky = FlakyTransport(controller.transport)
        let opener: HCIScannerBackend.Opener = { () throws(HCIScannerError) -> any HCITransport in flaky }
        let harness = try await HCIHarness.up(opener: opener)
        #expect(controller.commands == HCIHarness.setupLegacy)
        for index in 0..<20 {
            controller.inject(
                FakeController.legacyEvent([FakeController.report(UInt64(index + 1), data: [0x02, 0x01, 0x06])]))
        }
        #expect(await harness.sink.waitForReports(20))
        #expect(harness.sink.reports.map(\.address.rawValue) == (1...20).map { UInt64($0) })
        #expect(await harness.stop() == nil)
        #expect(flaky.interruptionsReturned > 10)
        #expect(flaky.spuriousWouldBlocks > 5)
        #expect(harness.backend.counters.snapshot.interruptions >= flaky.interruptionsReturned)
    }

    @Test func aSignalInterruptingPollIsRetried() async throws {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0 // no SA_RESTART (poll is never restarted anyway)
        sigaction(SIGUSR2, &action, nil)

        let controller = FakeController()
        let harness = try HCIHarness([controller])
        // Threads inherit their creator's signal mask, and Swift's worker threads block signals:
        // start the backend from a thread that lets SIGUSR2 through.
        TestThread.start {
            var unblock = sigset_t()
            sigemptyset(&unblock)
            sigaddset(&unblock, SIGUSR2)
            pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
            harness.start()
        }
        #expect(await harness.sink.waitForState(.up))
        let thread = try #require(harness.backend.readerThread)
        // One signal per poll; the wait's own 1 ms pause lets it land, off the cooperative threads.
        #expect(
            await waitUntil {
                if harness.backend.counters.snapshot.interruptions > 0 { return true }
                pthread_kill(thread, SIGUSR2)
                return false
            })
        controller.inject(FakeController.legacyEvent([FakeController.report(Self.beacon, data: [0x02, 0x01, 0x06])]))
        #expect(await harness.sink.waitForReports(1))
        #expect(await harness.stop() == nil)
    }

    @Test func theStatusCarriesTheCounters() async throws {
        let controller = FakeController()
        let harness = try await HCIHarness.up([controller])
        controller.inject(FakeController.legacyEvent([FakeController.report(Self.beacon, data: [])]))
        #expect(await harness.sink.waitForReports(1))
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("hci")
        harness.backend.hciStatus.render(into: &writer)
        writer.endObject()
        let object = try JSONSerialization.jsonObject(with: Data(writer.bytes)) as? [String: Any]
        let hci = try #require(object?["hci"] as? [String: Any])
        #expect(hci["adapter"] as? String == "hci0")
        #expect(hci["mode"] as? String == "legacy")
        #expect(hci["reports"] as? Int == 1)
        #expect(hci["events"] as? Int == 6)
        for key in ["malformed", "restarts", "reconnects"] { #expect(hci[key] as? Int == 0) }
        #expect(await harness.stop() == nil)
    }
}

@Suite struct HCIScannerRecoveryTests {
    @Test func theAdapterGoingAwayAndComingBack() async throws {
        let first = FakeController()
        let harness = try await HCIHarness.up([first])
        let upAt = harness.sink.states.count
        first.close()
        #expect(
            await harness.sink.waitForState(.down, after: upAt) {
                $0 == "adapter hci0 is gone (its socket was closed); retrying in 0.02 s"
            })
        #expect(await harness.sink.waitForState(.down, after: upAt) { $0.hasPrefix("no Bluetooth adapter named hci0") })
        #expect(harness.backend.mode == nil)
        let downAt = harness.sink.states.count
        let second = FakeController()
        harness.adapter.plugIn(second)
        #expect(await harness.sink.waitForState(.up, after: downAt))
        #expect(second.commands == HCIHarness.setupLegacy)
        second.inject(FakeController.legacyEvent([FakeController.report(7, data: [0x02, 0x01, 0x06])]))
        #expect(await harness.sink.waitForReports(1))
        #expect(harness.backend.counters.snapshot.reconnects == 1)
        #expect(await harness.stop() == nil)
        #expect(second.commands.last == HCICommand(opcode: 0x200C, parameters: [0x00, 0x00]))
    }

    @Test func theKernelSayingTheAdapterWentDownIsALoss() async throws {
        let controller = FakeController(deviceID: 3)
        let harness = try await HCIHarness.up([controller])
        // Another adapter going down changes nothing.
        controller.inject([0xFD, 0x06, 0x01, 0x00, 0x04, 0x00, 0x04, 0x00])
        controller.inject(FakeController.legacyEvent([FakeController.report(7, data: [])]))
        #expect(await harness.sink.waitForReports(1))
        #expect(!harness.sink.states.contains { $0.0 == .down })
        controller.inject([0xFD, 0x06, 0x01, 0x00, 0x04, 0x00, 0x03, 0x00])
        #expect(await harness.sink.waitForState(.down) { $0.hasPrefix("adapter hci0 is gone (it was brought down)") })
        #expect(await harness.stop() == nil)
    }

    @Test func theSilenceWatchdogRestartsTheScan() async throws {
        let controller = FakeController()
        let harness = try await HCIHarness.up([controller]) { $0.silenceRestart = 100_000 }
        #expect(await controller.waitForCommands(10))
        #expect(Array(controller.commands[5..<10]) == HCIHarness.setupLegacy)
        #expect(harness.backend.counters.snapshot.restarts >= 1)
        #expect(await harness.stop() == nil)
        #expect(harness.sink.states.filter { $0.0 == .up }.count == 1)
        #expect(!harness.sink.states.contains { $0.0 == .down })
    }

    @Test func reportsKeepTheWatchdogQuiet() async throws {
        let controller = FakeController()
        // Reports every 40 ms against a 400 ms watchdog, from a thread of their own that starts
        // when the scanner is up and goes on until the counters are read: a test task resumed
        // late (the cooperative pool is shared by the whole suite) must not leave a silent gap.
        let harness = try HCIHarness([controller]) { $0.silenceRestart = 400_000 }
        let sink = harness.sink
        let done = TestFlag()
        TestThread.start {
            let deadline = MonotonicClock.micros() + 20_000_000
            while sink.lastState?.0 != .up {
                if MonotonicClock.micros() > deadline { return }
                usleep(1_000)
            }
            var index: UInt64 = 0
            while !done.isSet, MonotonicClock.micros() < deadline {
                index += 1
                controller.inject(FakeController.legacyEvent([FakeController.report(index, data: [])]))
                usleep(40_000)
            }
        }
        harness.start()
        #expect(await harness.sink.waitForReports(30))
        #expect(harness.backend.counters.snapshot.restarts == 0)
        #expect(controller.commands.count == 5)
        done.set()
        #expect(await harness.stop() == nil)
    }

    @Test func gracefulShutdownStopsTheThreadAndDisablesTheScan() async throws {
        let controller = FakeController(.extended)
        let harness = try HCIHarness([controller])
        let group = ServiceGroup(services: [harness.backend], logger: HCITestLogger.quiet)
        let task = Task { try await group.run() }
        #expect(await harness.sink.waitForState(.up))
        // When the scanner says it stopped, seen from a thread of its own: the cooperative pool,
        // which the suite's other tests may hold, must not stretch the scanner's own figure.
        let stoppedAt = Mutex<ContinuousClock.Instant?>(nil)
        let sink = harness.sink
        let stopping = ContinuousClock.now
        TestThread.start {
            while sink.lastState?.0 != ScannerStatus.State.none, ContinuousClock.now - stopping < .seconds(10) {
                usleep(1_000)
            }
            stoppedAt.withLock { $0 = ContinuousClock.now }
        }
        await group.triggerGracefulShutdown()
        try await task.value
        // The daemon's whole shutdown has 2 s; the scanner takes a fraction of that even with the
        // suite's other tests competing for the two cores.
        #expect(await waitUntil(within: 10) { stoppedAt.withLock { $0 } != nil })
        let stopped = stoppedAt.withLock { $0 } ?? ContinuousClock.now
        #expect(stopped - stopping < .milliseconds(1500))
        #expect(controller.commands.last == HCIScanSetup.enable(.extended, false))
        #expect(harness.sink.lastState?.0 == ScannerStatus.State.none)
        // Nobody reads any more.
        controller.inject(FakeController.legacyEvent([FakeController.report(7, data: [])]))
        // A check that nothing is read: no event marks "not read", so it looks a while.
        try await Task.sleep(for: .milliseconds(50))
        #expect(harness.sink.reports.isEmpty)
    }

    @Test func cancellationStopsTheBackendToo() async throws {
        let controller = FakeController()
        let harness = try HCIHarness([controller])
        let task = Task { try await harness.backend.run() }
        #expect(await harness.sink.waitForState(.up))
        task.cancel()
        try await task.value
        #expect(controller.commands.last == HCIScanSetup.enable(.legacy, false))
    }

    @Test func theBackendRecordsWhatItSendsAndReceives() async throws {
        let directory = try HCIRecordingFiles.temporaryDirectory()
        defer { HCIRecordingFiles.remove(directory) }
        let path = directory + "/scan.btsnoop"
        let recorder = try BTSnoopRecorder(path: path, maxBytes: 1 << 20, keep: 2, logger: HCITestLogger.quiet)
        let controller = FakeController()
        let harness = try await HCIHarness.up([controller], recorder: recorder)
        controller.inject(FakeController.legacyEvent([FakeController.report(0xA1, data: [0x02, 0x01, 0x06])]))
        controller.inject(FakeController.legacyEvent([FakeController.report(0xA2, data: [0x02, 0x01, 0x06])]))
        #expect(await harness.sink.waitForReports(2))
        // Flushed within a second while scanning goes on: 5 commands, 5 answers, 2 events.
        #expect(await waitUntil(within: 3) { (try? HCIRecordingFiles.records(path).count) == 12 })
        #expect(await harness.stop() == nil)

        let records = try HCIRecordingFiles.records(path)
        #expect(records.count == 14)
        #expect(records[0].flags == 0x2 && records[0].bytes == [0x01, 0x03, 0x20, 0x00])
        #expect(records[1].flags == 0x3 && records[1].bytes.prefix(2) == [0x04, 0x0E])
        #expect(records.last?.flags == 0x3)
        #expect(records[12].bytes == [0x01, 0x0C, 0x20, 0x02, 0x00, 0x00])
        // What `beacond replay` sees.
        #expect(try HCIRecordingFiles.reportAddresses(path) == [0xA1, 0xA2])
        // And BlueZ's own reader (btmon, from Debian's bluez, which `make deps` installs).
        let btmon = try HCIRecordingFiles.btmon(path)
        #expect(btmon.status == 0, "btmon: \(btmon.output)")
        #expect(btmon.output.contains("LE Set Scan Enable"), "btmon: \(btmon.output)")
        #expect(btmon.output.contains("LE Advertising Report"), "btmon: \(btmon.output)")
        #expect(btmon.output.contains("00:00:00:00:00:A1"), "btmon: \(btmon.output)")
    }
}
