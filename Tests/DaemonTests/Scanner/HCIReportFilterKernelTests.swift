import BLEPayload
import BeacondTestSupport
import CLinux
import Glibc
import Testing

@testable import BeacondCore

/// The kernel filter (`HCIReportFilter`) run by the real kernel: attached to one end of a
/// SOCK_SEQPACKET socketpair, whose datagrams go through the receiving socket's filter as a raw
/// HCI socket's packets do (`sk_filter` in both). A packet written to the other end either
/// arrives whole or not at all. The QEMU stack proves the same program on a raw HCI socket.
@Suite struct HCIReportFilterKernelTests {
    static let company = GeoRacingSignal.defaultCompanyID

    @Test func geoRacingFramesPassWhateverElseTheAdvertCarries() throws {
        let filter = try KernelFilterPair()
        let v1 = GeoRacingSignal.circuit(zone: 3, mode: .redFlag, sequence: 7).advertisingData()
        #expect(filter.passes(legacyEvent(data: v1)))
        // A user beacon, and a frame the decoder rejects (unknown version): both are counted.
        #expect(
            filter.passes(
                legacyEvent(data: advert(company: Self.company, payload: GeoRacingUserBeacon.frame(uidHash: 9)))))
        #expect(filter.passes(legacyEvent(data: advert(company: Self.company, payload: [0x7F, 1, 2]))))
        // Behind other structures, as the last one, after manufacturer data of another company.
        var data: [UInt8] = [2, 0x01, 0x06, 3, 0x09, 0x41, 0x42]
        data += [5, 0xFF, 0x4C, 0x00, 0x02, 0x15]
        data += [4, 0xFF, 0x34, 0x12, 0x01]
        #expect(filter.passes(legacyEvent(data: data)))
        // The ninth structure: eight of two bytes before it, 31 bytes in all.
        let late =
            [UInt8](repeating: 0, count: 8).flatMap { _ in [1, 0x0A] as [UInt8] } + [14, 0xFF, 0x34, 0x12]
            + [UInt8](repeating: 0, count: 11)
        #expect(late.count == 31)
        #expect(filter.passes(legacyEvent(data: late)))
        // An extended report of a legacy PDU.
        #expect(filter.passes(extendedEvent(data: v1, properties: 0x10)))
    }

    @Test func reportsProvablyNotGeoRacingAreDropped() throws {
        let filter = try KernelFilterPair()
        let iBeacon = advert(company: 0x004C, payload: [0x02, 0x15] + [UInt8](repeating: 0xAB, count: 21))
        #expect(!filter.passes(legacyEvent(data: iBeacon)))
        #expect(!filter.passes(legacyEvent(data: [])))
        #expect(!filter.passes(legacyEvent(data: [2, 0x01, 0x06, 5, 0x09, 0x50, 0x68, 0x6F, 0x6E])))
        // Manufacturer data too short to hold a company id, and one of the company's bytes swapped.
        #expect(!filter.passes(legacyEvent(data: [2, 0xFF, 0x34])))
        #expect(!filter.passes(legacyEvent(data: [4, 0xFF, 0x12, 0x34, 0x01])))
        // A zero length ends the data: the decoder reads nothing after it.
        #expect(!filter.passes(legacyEvent(data: [2, 0x01, 0x06, 0, 4, 0xFF, 0x34, 0x12, 0x01])))
        #expect(!filter.passes(legacyEvent(data: iBeacon, eventType: 0x04)))
        #expect(!filter.passes(extendedEvent(data: iBeacon, properties: 0x13)))
    }

    @Test func whatTheFilterCannotJudgePasses() throws {
        let filter = try KernelFilterPair()
        let iBeacon = advert(company: 0x004C, payload: [0x02, 0x15, 0x01])
        // Command Complete and Command Status: the scanner's own commands.
        #expect(filter.passes([0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00]))
        #expect(filter.passes([0x04, 0x0F, 0x04, 0x00, 0x01, 0x0C, 0x20]))
        // Two reports in one event.
        var two = legacyEvent(data: iBeacon)
        two[4] = 2
        two += Array(two[5...])
        two[2] = UInt8(two.count - 3)
        #expect(filter.passes(two))
        // Extended PDUs: a fragment, and a complete one (it may be a chain's tail).
        #expect(filter.passes(extendedEvent(data: iBeacon, properties: 0x0020)))
        #expect(filter.passes(extendedEvent(data: iBeacon, properties: 0x0000)))
        // A directed report (no data).
        #expect(filter.passes([0x04, 0x3E, 0x11, 0x0B, 0x01, 0x01, 0x00] + [UInt8](repeating: 0x11, count: 13)))
    }

    @Test func everyMalformedEventReachesTheDecoder() throws {
        let filter = try KernelFilterPair()
        let iBeacon = advert(company: 0x004C, payload: [0x02, 0x15, 0x01])
        var event = legacyEvent(data: iBeacon)
        // The parameter length disagrees with the bytes.
        event[2] &+= 1
        #expect(filter.passes(event))
        // A byte short, a byte long.
        #expect(filter.passes(Array(legacyEvent(data: iBeacon).dropLast())))
        #expect(filter.passes(legacyEvent(data: iBeacon) + [0]))
        // Data_Length over 31, with the packet's lengths agreeing.
        var long = legacyEvent(data: [UInt8](repeating: 0x01, count: 32))
        long[2] = UInt8(long.count - 3)
        #expect(filter.passes(long))
        // A structure running past the data; a reserved event type.
        #expect(filter.passes(legacyEvent(data: [2, 0x01, 0x06, 9, 0x09, 0x41])))
        #expect(filter.passes(legacyEvent(data: iBeacon, eventType: 0x05)))
        // Shorter than any report: no load may run past the end (the kernel drops on that).
        #expect(filter.passes([0x04, 0x3E, 0x02, 0x02, 0x01]))
        #expect(filter.passes([0x04, 0x3E]))
        #expect(filter.passes(Array(extendedEvent(data: [], properties: 0x10).prefix(20))))
    }

    @Test func theProgramFollowsTheConfiguredCompany() throws {
        let filter = try KernelFilterPair(company: 0xBEEF)
        #expect(filter.passes(legacyEvent(data: advert(company: 0xBEEF, payload: [1, 2, 3]))))
        #expect(!filter.passes(legacyEvent(data: advert(company: Self.company, payload: [1, 2, 3]))))
    }

    /// The property the daemon relies on: whatever the filter drops, the decoder would have found
    /// one well-formed report with no GeoRacing frame, user beacon or rejected frame in it. Random
    /// events, many near the edges (lengths off by one, the company's bytes, zero lengths).
    @Test func aDroppedPacketIsOneTheDecoderFindsNothingIn() throws {
        let filter = try KernelFilterPair()
        var generator = SplitMix64(seed: 0x6B65_726E_656C)
        var dropped = 0
        var passedOthers = 0
        for index in 0..<20_000 {
            let packet = RandomHCIEvent.make(using: &generator)
            let passes = filter.passes(packet)
            let verdict = DecoderVerdict(packet)
            if !passes {
                dropped += 1
                #expect(verdict == .nothingToSee, "event \(index) dropped: \(packet)")
            } else if verdict == .nothingToSee {
                passedOthers += 1
            }
        }
        // The filter does drop: most events with nothing to see are legacy single reports.
        #expect(dropped > 5_000)
        #expect(passedOthers < dropped)
    }

    // MARK: Events

    func advert(company: UInt16, payload: [UInt8]) -> [UInt8] {
        [UInt8(3 + payload.count), 0xFF, UInt8(company & 0xFF), UInt8(company >> 8)] + payload
    }

    func legacyEvent(data: [UInt8], eventType: UInt8 = 0x03) -> [UInt8] {
        let body: [UInt8] =
            [0x02, 0x01, eventType, 0x01, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, UInt8(data.count)] + data
            + [0xC4]
        return [0x04, 0x3E, UInt8(body.count)] + body
    }

    func extendedEvent(data: [UInt8], properties: UInt16) -> [UInt8] {
        var body: [UInt8] = [0x0D, 0x01, UInt8(properties & 0xFF), UInt8(properties >> 8), 0x01]
        body += [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x01, 0x00, 0xFF, 0x7F, 0xC4, 0x00, 0x00, 0x00]
        body += [UInt8](repeating: 0, count: 6) + [UInt8(data.count)] + data
        return [0x04, 0x3E, UInt8(body.count)] + body
    }
}

/// A SOCK_SEQPACKET socketpair whose receiving end carries the kernel filter.
final class KernelFilterPair {
    let receiver: Int32
    let sender: Int32

    init(company: UInt16 = GeoRacingSignal.defaultCompanyID) throws {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw PairFailure(operation: "socketpair", code: errno)
        }
        (receiver, sender) = (pair[0], pair[1])
        let filter = HCIKernelFilter(companyID: company, demand: AllDevicesDemand())
        let code = filter.attach(to: receiver)
        guard code == 0 else { throw PairFailure(operation: "SO_ATTACH_FILTER", code: code) }
    }

    deinit {
        close(receiver)
        close(sender)
    }

    struct PairFailure: Error, CustomStringConvertible {
        let operation: String
        let code: Int32
        var description: String { "\(operation): \(errnoText(code))" }
    }

    /// Writes `packet` and reads back what arrived: true when all of it did, false when nothing did.
    func passes(_ packet: [UInt8]) -> Bool {
        let sent = packet.withUnsafeBytes { send(sender, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        #expect(sent == packet.count, "send: \(errnoText(errno))")
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = buffer.withUnsafeMutableBytes { recv(receiver, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if count < 0 {
            #expect(errno == EAGAIN, "recv: \(errnoText(errno))")
            return false
        }
        #expect(Array(buffer.prefix(count)) == packet, "the packet arrived cut short")
        return true
    }
}

/// What the daemon's decoders make of one H4 packet.
enum DecoderVerdict: Equatable {
    /// One well-formed advertising report without a GeoRacing frame: only the table of other
    /// devices wants it.
    case nothingToSee
    case something

    init(_ packet: [UInt8], company: UInt16 = GeoRacingSignal.defaultCompanyID) {
        guard packet.first == 0x04, packet.count > 1 else {
            self = .something
            return
        }
        var decoder = HCIEventDecoder()
        let frames = GeoRacingDecoder(companyID: company)
        var reports = 0
        var interesting = false
        let outcome = packet.dropFirst().withUnsafeBytes { event in
            decoder.decode(event: event, timestamp: 0) { report in
                reports += 1
                if case .none = frames.decode(report.data) {} else { interesting = true }
                if report.data.malformedOffset != nil || report.isTruncated { interesting = true }
            }
        }
        self = outcome == .advertising(reports: 1) && reports == 1 && !interesting ? .nothingToSee : .something
    }
}

/// Random H4 packets near the filter's edges: legacy and extended reports with random AD
/// structures (the company's bytes often among them), their lengths sometimes off, and other
/// events.
enum RandomHCIEvent {
    static func make(using generator: inout SplitMix64) -> [UInt8] {
        let data = advertisingData(using: &generator)
        var packet: [UInt8]
        switch Int.random(in: 0..<20, using: &generator) {
        case 0..<13:
            let eventType = UInt8.random(in: 0...5, using: &generator)
            var body: [UInt8] = [0x02, 0x01, eventType, 0x01]
            body += bytes(6, &generator)
            body += [UInt8(data.count)] + data + [0xC4]
            packet = [0x04, 0x3E, UInt8(body.count)] + body
        case 13..<17:
            let choices: [UInt8] = [0x10, 0x13, 0x12, 0x30, 0x00, 0x20, 0x50]
            let properties = choices[Int.random(in: 0..<choices.count, using: &generator)]
            var body: [UInt8] = [0x0D, 0x01, properties, 0x00, 0x01]
            body += bytes(6, &generator)
            body += [0x01, 0x00, 0xFF, 0x7F, 0xC4, 0x00, 0x00, 0x00] + [UInt8](repeating: 0, count: 6)
            body += [UInt8(data.count)] + data
            packet = [0x04, 0x3E, UInt8(body.count)] + body
        case 17:
            packet = [0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00]
        default:
            packet = [0x04] + bytes(Int.random(in: 1..<40, using: &generator), &generator)
        }
        // Now and then a byte changed, or the packet cut or lengthened by one.
        switch Int.random(in: 0..<10, using: &generator) {
        case 0:
            let index = Int.random(in: 1..<packet.count, using: &generator)
            packet[index] = UInt8.random(in: 0...255, using: &generator)
        case 1:
            packet.removeLast()
        case 2:
            packet.append(0)
        default:
            break
        }
        return packet
    }

    /// Up to 31 bytes of AD structures, or over 31 now and then, or a structure that overruns.
    static func advertisingData(using generator: inout SplitMix64) -> [UInt8] {
        var data: [UInt8] = []
        let limit = Int.random(in: 0..<12, using: &generator) == 0 ? 40 : 31
        while data.count < limit, Int.random(in: 0..<5, using: &generator) > 0 {
            let room = limit - data.count
            let type: UInt8 = [0x01, 0x09, 0xFF, 0xFF, 0x16, 0x0A][Int.random(in: 0..<6, using: &generator)]
            var payload: [UInt8]
            if type == 0xFF, Int.random(in: 0..<3, using: &generator) == 0 {
                payload = [0x34, 0x12] + bytes(Int.random(in: 0..<12, using: &generator), &generator)
            } else if type == 0xFF, Int.random(in: 0..<3, using: &generator) == 0 {
                payload = [0x4C, 0x00] + bytes(Int.random(in: 0..<8, using: &generator), &generator)
            } else {
                payload = bytes(Int.random(in: 0..<6, using: &generator), &generator)
            }
            if Int.random(in: 0..<20, using: &generator) == 0 {
                data.append(0)
                continue
            }
            guard payload.count + 2 <= room else { break }
            var length = UInt8(payload.count + 1)
            if Int.random(in: 0..<25, using: &generator) == 0 { length &+= UInt8.random(in: 1...4, using: &generator) }
            data += [length, type] + payload
        }
        return data
    }

    static func bytes(_ count: Int, _ generator: inout SplitMix64) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}
