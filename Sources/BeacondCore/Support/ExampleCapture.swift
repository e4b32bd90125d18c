import BLEPayload

/// The bundled example: a race-weekend afternoon of flag changes, as the venue
/// beacons would broadcast them, built with the project's own encoder and writer.
package enum ExampleCapture {
    /// 2026-05-16T12:00:00Z.
    static let start: Int64 = 1_778_932_800_000_000

    struct Beacon {
        let address: BluetoothAddress
        var signal: GeoRacingSignal
        var rssi: Int8
        var active: Bool
    }

    /// The first day the example covers (days since 1970): a day key for it signs the example.
    package static var day: UInt32 { VenueKeyring.day(of: UInt32(start / 1_000_000)) }

    /// Three circuit beacons (zones 1–3) and one marshal's staff device, heard once a
    /// second for four minutes, with a safety car, a red flag, and an evacuation. With `signer`,
    /// every GeoRacing frame is a signed v3 frame (the staff device's too), its signing time its
    /// record's second, each device's source id its own (1–4); nil when the keys cannot sign the
    /// example's day.
    package static func raceWeekend(signer: BeaconSigner? = nil) -> [UInt8]? {
        var beacons = [
            Beacon(
                address: BluetoothAddress(rawValue: 0xC0_FF_EE_00_00_01),
                signal: .circuit(zone: 1, mode: .normal, sequence: 100, temperature: 24), rssi: -61, active: true),
            Beacon(
                address: BluetoothAddress(rawValue: 0xC0_FF_EE_00_00_02),
                signal: .circuit(zone: 2, mode: .normal, sequence: 200, temperature: 25), rssi: -72, active: true),
            Beacon(
                address: BluetoothAddress(rawValue: 0xC0_FF_EE_00_00_03),
                signal: .circuit(zone: 3, mode: .normal, sequence: 300), rssi: -80, active: true),
            Beacon(
                address: BluetoothAddress(rawValue: 0xDA_00_00_00_00_07),
                signal: .staff(sourceID: 0x00C0_FFEE, zone: 3, mode: .redFlag, sequence: 1, ttl: 30), rssi: -68,
                active: false),
        ]
        // (second, beacon, new mode, active)
        let script: [(Int, Int, GeoRacingMode, Bool)] = [
            (20, 1, .safetyCar, true),
            (80, 1, .normal, true),
            (90, 2, .redFlag, true),
            (92, 3, .redFlag, true),
            (140, 3, .redFlag, false),
            (150, 2, .normal, true),
            (170, 0, .evacuation, true),
            (200, 0, .evacuation, false),
        ]
        var bytes = BTSnoopWriter.fileHeader()
        for second in 0..<240 {
            for (time, index, mode, active) in script where time == second {
                if beacons[index].signal.mode != mode { beacons[index].signal.sequence &+= 1 }
                beacons[index].signal.mode = mode
                beacons[index].active = active
            }
            for (index, beacon) in beacons.enumerated() where beacon.active {
                // Spread the beacons over the second; RSSI wanders by a few dB.
                let stamp = start + Int64(second) * 1_000_000 + Int64(index) * 250_000 + 1_234
                let rssi = beacon.rssi &+ Int8(truncatingIfNeeded: (second * 7 + index * 3) % 5 - 2)
                var signal = beacon.signal
                if var signer {
                    signer.sourceID = UInt16(index + 1)
                    let second = UInt32(clamping: stamp / 1_000_000)
                    guard let signed = signer.sign(signal, mode: signal.mode.rawValue, signedAt: second) else {
                        return nil
                    }
                    signal = signed
                }
                append(report(beacon.address, signal.advertisingData(), rssi: rssi), at: stamp, to: &bytes)
            }
            if second % 10 == 5 {
                // A phone's iBeacon nearby: not GeoRacing.
                var other = AdvertisingDataBuilder()
                other.appendFlags(0x06)
                other.appendManufacturerData(
                    companyID: 0x004C, payload: [0x02, 0x15] + [UInt8](repeating: 0xAB, count: 21))
                append(
                    report(BluetoothAddress(rawValue: 0x4A_11_22_33_44_55), other.bytes, rssi: -88, random: true),
                    at: start + Int64(second) * 1_000_000 + 600_000, to: &bytes)
            }
            if second == 45 {
                // A frame with the GeoRacing company id but an unknown version: rejected.
                var bad = AdvertisingDataBuilder()
                bad.appendManufacturerData(
                    companyID: GeoRacingSignal.defaultCompanyID, payload: [9, 0, 1, 2, 0, 0, 1, 10])
                append(
                    report(BluetoothAddress(rawValue: 0x5E_00_00_00_00_99), bad.bytes, rssi: -90, random: true),
                    at: start + Int64(second) * 1_000_000 + 700_000, to: &bytes)
            }
        }
        return bytes
    }

    private static func report(_ address: BluetoothAddress, _ data: [UInt8], rssi: Int8, random: Bool = false)
        -> OwnedAdvertisingReport
    {
        OwnedAdvertisingReport(
            kind: .advNonconnInd, addressType: random ? .randomDevice : .publicDevice,
            address: address, rssi: rssi, data: data)
    }

    private static func append(_ report: OwnedAdvertisingReport, at stamp: Int64, to bytes: inout [UInt8]) {
        // Every example report has at most 31 bytes of data, so encoding cannot fail.
        guard let event = try? HCIEventEncoder.advertisingReport([report]) else { return }
        BTSnoopWriter.appendRecord(to: &bytes, timestamp: stamp, packet: HCIEventEncoder.h4(event))
    }
}
