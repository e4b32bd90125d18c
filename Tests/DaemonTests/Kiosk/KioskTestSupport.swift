import Foundation

@testable import BeacondClient
@testable import BeacondCore

/// States, views and frame readers for the kiosk's tests.
enum KioskSamples {
    static let now: Int64 = 1_778_932_800_000_000

    static func state(
        mode: String, source: String = "beacon", zone: Int? = 2, remote: RemoteReport? = nil,
        ageMicros: Int64 = 3_000_000
    ) -> StateMessage {
        StateMessage(
            seq: 7, time: WallTime(micros: now - ageMicros), mode: mode, source: source, zone: zone, beacon: nil,
            remote: remote, scanner: ScannerStatus(backend: "hci", state: .up))
    }

    static func remote(fresh: Bool = true, age: Double? = 2, message: String? = nil) -> RemoteReport {
        RemoteReport(
            mode: "red_flag", reportedMode: "red_flag", fresh: fresh, latched: false, restored: false, age: age,
            message: message, lastError: nil)
    }

    /// A view showing `flag`.
    static func view(_ flag: KioskView.Flag) -> KioskView {
        let modes: [KioskView.Flag: String] = [
            .green: "normal", .yellow: "yellow_flag", .vsc: "vsc", .safetyCar: "safety_car", .red: "red_flag",
            .evacuation: "evacuation",
        ]
        guard let mode = modes[flag] else {
            let link = KioskView.Link.unreachable(since: now - 12_000_000, reason: "the daemon closed the connection")
            return KioskView(link: link, now: now)
        }
        return KioskView(link: .connected(state(mode: mode)), now: now)
    }

    /// A frame's rows: the text after each cursor position, its colour escapes removed.
    static func rows(_ frame: [UInt8]) -> [String] {
        let text = String(decoding: frame, as: UTF8.self)
        let pieces = text.split(separator: cursorPattern, omittingEmptySubsequences: false).dropFirst()
        return pieces.map { String($0).replacing(sgrPattern, with: "") }
    }

    /// The escape sequences in a frame, in order.
    static func escapes(_ frame: [UInt8]) -> [String] {
        String(decoding: frame, as: UTF8.self).matches(of: anyEscape).map { String($0.output) }
    }

    nonisolated(unsafe) static let cursorPattern = /\x1B\[(?:\d+;1)?H/
    nonisolated(unsafe) static let sgrPattern = /\x1B\[[0-9;]*m/
    /// An ESC and whatever follows it up to the final byte of a CSI sequence, or the next character.
    nonisolated(unsafe) static let anyEscape = /\x1B(?:\[[0-9;?]*[@-~]|.)?/
}
