import BLEPayload
import BeacondTestSupport
import Glibc
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The pure parts of the HCI backend: the commands, the mode choice, configuration and filter.
@Suite struct HCIScanSetupTests {
    @Test func extendedScanningNeedsFeatureBit12AndBothCommandBits() {
        var features = [UInt8](repeating: 0, count: 8)
        var commands = [UInt8](repeating: 0, count: 64)
        #expect(!HCIScanSetup.supportsExtendedScanning(leFeatures: features, supportedCommands: commands))
        features[1] = 0x10
        #expect(!HCIScanSetup.supportsExtendedScanning(leFeatures: features, supportedCommands: commands))
        commands[37] = 0x20
        #expect(!HCIScanSetup.supportsExtendedScanning(leFeatures: features, supportedCommands: commands))
        commands[37] = 0x40
        #expect(!HCIScanSetup.supportsExtendedScanning(leFeatures: features, supportedCommands: commands))
        commands[37] = 0x60
        #expect(HCIScanSetup.supportsExtendedScanning(leFeatures: features, supportedCommands: commands))
        features[1] = 0xEF
        #expect(!HCIScanSetup.supportsExtendedScanning(leFeatures: features, supportedCommands: commands))
        // Short answers never read out of bounds.
        #expect(!HCIScanSetup.supportsExtendedScanning(leFeatures: [0x00], supportedCommands: commands))
        #expect(!HCIScanSetup.supportsExtendedScanning(leFeatures: [0x00, 0x10], supportedCommands: [0x60]))
        let capabilities = HCIScanSetup.Capabilities(leFeatures: [0x00, 0x10], supportedCommands: nil)
        #expect(capabilities.mode == .legacy)
    }

    @Test func legacyCommandsCarryTypeTimingAndNoDuplicateFilter() {
        let passive = HCIScanSetup.parameters(.legacy, active: false, interval: 0x00A0, window: 0x0050)
        #expect(passive.opcode == 0x200B)
        #expect(passive.parameters == [0x00, 0xA0, 0x00, 0x50, 0x00, 0x00, 0x00])
        #expect(passive.packet == [0x01, 0x0B, 0x20, 7, 0x00, 0xA0, 0x00, 0x50, 0x00, 0x00, 0x00])
        let active = HCIScanSetup.parameters(.legacy, active: true, interval: 0x4000, window: 0x0004)
        #expect(active.parameters == [0x01, 0x00, 0x40, 0x04, 0x00, 0x00, 0x00])
        #expect(HCIScanSetup.enable(.legacy, true) == HCICommand(opcode: 0x200C, parameters: [0x01, 0x00]))
        #expect(HCIScanSetup.enable(.legacy, false) == HCICommand(opcode: 0x200C, parameters: [0x00, 0x00]))
    }

    @Test func extendedCommandsUseThe1MPHYAndScanUntilDisabled() {
        let parameters = HCIScanSetup.parameters(.extended, active: true, interval: 0x0140, window: 0x0050)
        #expect(parameters.opcode == 0x2041)
        #expect(parameters.parameters == [0x00, 0x00, 0x01, 0x01, 0x40, 0x01, 0x50, 0x00])
        #expect(
            HCIScanSetup.enable(.extended, true)
                == HCICommand(opcode: 0x2042, parameters: [0x01, 0x00, 0x00, 0x00, 0x00, 0x00]))
        #expect(
            HCIScanSetup.enable(.extended, false)
                == HCICommand(opcode: 0x2042, parameters: [0x00, 0x00, 0x00, 0x00, 0x00, 0x00]))
    }

    @Test func intervalAndWindowBecome0625MillisecondUnits() throws {
        func units(_ configuration: HCIScannerConfiguration) throws -> [UInt16] {
            let units = try configuration.scanUnits()
            return [units.interval, units.window]
        }
        #expect(try units(HCIScannerConfiguration()) == [160, 160])
        #expect(try units(HCIScannerConfiguration(intervalMs: 200, windowMs: 50)) == [320, 80])
        #expect(try units(HCIScannerConfiguration(intervalMs: 10_240, windowMs: 3)) == [0x4000, 5])
        var precise = HCIScannerConfiguration()
        precise.interval = 2_500
        precise.window = 2_500
        #expect(try units(precise) == [4, 4])
    }

    @Test func badTimingAndAdapterNamesAreRejected() {
        let bad = [
            HCIScannerConfiguration(intervalMs: 50, windowMs: 100),
            HCIScannerConfiguration(intervalMs: 2, windowMs: 2),
            HCIScannerConfiguration(intervalMs: 10_241, windowMs: 100),
            HCIScannerConfiguration(adapter: "hcifoo"),
            HCIScannerConfiguration(adapter: "hci"),
            HCIScannerConfiguration(adapter: "usb0"),
        ]
        for configuration in bad {
            #expect(throws: HCIScannerError.self) { try configuration.validate() }
        }
        #expect(throws: HCIScannerError.invalidConfiguration("scan window 100 ms is longer than the interval 50 ms")) {
            try HCIScannerConfiguration(intervalMs: 50, windowMs: 100).validate()
        }
        #expect(throws: Never.self) { try HCIScannerConfiguration(adapter: "hci12").validate() }
    }

    @Test func theDaemonConfigurationMapsOntoTheScanner() {
        var scanner = DaemonConfiguration.Scanner()
        scanner.adapters = .named(["hci0", "hci1"])
        scanner.active = true
        scanner.scanIntervalMs = 300
        scanner.scanWindowMs = 30
        scanner.silenceRestart = 0
        let configuration = HCIScannerConfiguration(scanner, adapter: "hci1", retriesMissingAdapter: false)
        #expect(configuration.adapter == "hci1")
        #expect(configuration.active)
        #expect(configuration.interval == 300_000)
        #expect(configuration.window == 30_000)
        #expect(configuration.silenceRestart == 0)
        #expect(!configuration.retriesMissingAdapter)
    }

    @Test func theFilterPassesEventPacketsAndTheFourEvents() {
        let masks = HCIRawSocket.filterMasks(events: HCIRawSocket.filteredEvents)
        #expect(masks.type == 1 << 4)
        #expect(masks.low == 1 << 14 | 1 << 15)
        // 0x3E is bit 62, 0xFD folds onto bit 61 (the kernel masks event codes with 63).
        #expect(masks.high == 1 << 30 | 1 << 29)
    }

    @Test func openingAnAdapterFailsWithAnOperatorMessageNotACrash() {
        // This machine may have no Bluetooth at all; whatever the kernel says is mapped.
        do {
            let transport = try HCIRawSocket.open(adapter: "hci97")
            transport.close()
            Issue.record("hci97 opened")
        } catch {
            switch error {
            case .bluetoothUnavailable, .noAdapter, .permissionDenied, .adapterDown: break
            default: Issue.record("unexpected \(error)")
            }
            #expect(!error.description.isEmpty)
        }
    }

    @Test func messagesTellTheOperatorWhatToDo() {
        #expect(
            HCIScannerError.permissionDenied(adapter: "hci0", operation: "open").description
                .contains("beacond needs CAP_NET_RAW (run it as root"))
        #expect(HCIScannerError.leMetaFiltered(adapter: "hci0").description.contains("CAP_NET_RAW"))
        #expect(
            HCIScannerError.noAdapter(adapter: "hci0", known: ["hci1", "hci2"]).description
                == "no Bluetooth adapter named hci0 (the kernel has hci1, hci2)")
        #expect(HCIScannerError.bluetoothUnavailable.description.contains("no Bluetooth support"))
        #expect(
            HCIScannerError.scanBusy(adapter: "hci0", opcode: 0x200C).description
                .contains("use --backend bluez, or stop discovery (bluetoothctl scan off)"))
        #expect(
            HCIScannerError.commandTimeout(adapter: "hci0", opcode: 0x2041, timeout: 2_000_000).description
                == "hci0 did not answer LE Set Extended Scan Parameters (0x2041) within 2 s")
        #expect(
            HCIScannerError.commandFailed(adapter: "hci0", opcode: 0x200B, status: 0x12).description
                == "hci0 rejected LE Set Scan Parameters (0x200B): status 0x12 (Invalid HCI Command Parameters)")
        #expect(HCIScannerError.fromErrno(EAFNOSUPPORT, adapter: "hci0", operation: "x") == .bluetoothUnavailable)
        #expect(HCIScannerError.fromErrno(EPERM, adapter: "hci0", operation: "x").isPermanent)
        #expect(!HCIScannerError.fromErrno(ENODEV, adapter: "hci0", operation: "x").isPermanent)
        #expect(HCIScannerError.fromErrno(ENETDOWN, adapter: "hci0", operation: "x") == .adapterDown(adapter: "hci0"))
    }
}
