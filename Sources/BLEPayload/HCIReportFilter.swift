/// One classic BPF instruction, in the layout of Linux's `struct sock_filter`.
public struct SocketFilterInstruction: Hashable, Sendable {
    public var code: UInt16
    /// Instructions skipped when a conditional jump's test holds, and when it does not.
    public var jumpIfTrue: UInt8
    public var jumpIfFalse: UInt8
    public var k: UInt32

    public init(code: UInt16, jumpIfTrue: UInt8 = 0, jumpIfFalse: UInt8 = 0, k: UInt32 = 0) {
        self.code = code
        self.jumpIfTrue = jumpIfTrue
        self.jumpIfFalse = jumpIfFalse
        self.k = k
    }
}

/// A classic BPF program for a raw HCI socket (SO_ATTACH_FILTER) that drops, in the kernel, the
/// advertising reports it can prove carry no GeoRacing frame, so the scanner never reads them.
///
/// The kernel runs socket filters on raw HCI sockets (`hci_send_to_sock` queues each packet with
/// `sock_queue_rcv_skb`), after the H4 type byte is put in front. The program judges one kind of
/// packet only: an LE Advertising Report event (or an LE Extended Advertising Report of a legacy
/// PDU, complete) with exactly one report, whose lengths all agree, whose event type is one the
/// decoder takes, and whose AD structures walk cleanly to the end of its data. Such a report is
/// dropped when none of its structures is manufacturer-specific data (0xFF) with the company id,
/// as `GeoRacingDecoder` reads them (a zero length byte ends the data). Everything else passes:
/// other events, several reports, extended PDUs (a fragment's tail looks like a whole report),
/// and every malformed event, which the decoder must see to count it.
///
/// A dropped packet is one the decoder would have found no GeoRacing frame, user beacon or
/// rejected frame in, and no malformed byte: only the table of other devices misses it, so the
/// daemon lifts the filter while a client asks for that table (`AllDevicesDemand`).
public enum HCIReportFilter {
    /// The most AD structures the program walks: 31 bytes of data hold at most 16 (15 of two
    /// bytes and a zero length byte); data longer than 31 bytes passes before the walk.
    static let maxStructures = 16
    /// The return value that keeps a whole packet (the kernel trims a packet to what the
    /// program returns; 0 drops it).
    static let keep = UInt32.max

    /// The program for reports of `companyID`.
    public static func program(companyID: UInt16) -> [SocketFilterInstruction] {
        var assembler = Assembler()
        assembler.emitPreamble()
        assembler.emitWalk(companyID: companyID)
        return assembler.assembled()
    }

    // MARK: The assembler

    /// Packet offsets with the H4 type byte at 0.
    enum Offset {
        static let eventCode: UInt32 = 1
        static let parameterLength: UInt32 = 2
        static let subevent: UInt32 = 3
        static let reportCount: UInt32 = 4
        /// Legacy report: event type, address type, address (6), data length, data, RSSI.
        static let legacyEventType: UInt32 = 5
        static let legacyDataLength: UInt32 = 13
        static let legacyData: UInt32 = 14
        /// Extended report: event type (2), address type, address (6), PHYs (2), SID, TX power,
        /// RSSI, periodic interval (2), direct address type and address (7), data length, data.
        static let extendedEventType: UInt32 = 5
        static let extendedDataLength: UInt32 = 28
        static let extendedData: UInt32 = 29
    }

    /// Scratch memory words.
    enum Scratch {
        /// The offset just past the report's data.
        static let end: UInt32 = 0
        /// The offset of the current structure's length byte.
        static let offset: UInt32 = 1
        static let length: UInt32 = 2
        static let next: UInt32 = 3
    }

    enum Label: Hashable {
        case pass, drop, legacy, extended, walk
        /// Step n's start, its returns and its move to the next structure.
        case step(Int)
        case stepPass(Int)
        case stepDrop(Int)
        case stepNext(Int)
    }

    /// Classic BPF opcodes (linux/bpf_common.h, linux/filter.h).
    enum Opcode {
        static let loadWordAbsolute: UInt16 = 0x20
        static let loadHalfAbsolute: UInt16 = 0x28
        static let loadByteAbsolute: UInt16 = 0x30
        static let loadHalfIndexed: UInt16 = 0x48
        static let loadByteIndexed: UInt16 = 0x50
        static let loadImmediate: UInt16 = 0x00
        static let loadLength: UInt16 = 0x80
        static let loadMemory: UInt16 = 0x60
        static let loadXMemory: UInt16 = 0x61
        static let store: UInt16 = 0x02
        static let addImmediate: UInt16 = 0x04
        static let addX: UInt16 = 0x0C
        static let andImmediate: UInt16 = 0x54
        static let jumpAlways: UInt16 = 0x05
        static let jumpEqualImmediate: UInt16 = 0x15
        static let jumpEqualX: UInt16 = 0x1D
        static let jumpGreaterImmediate: UInt16 = 0x25
        static let jumpGreaterX: UInt16 = 0x2D
        static let jumpGreaterOrEqualImmediate: UInt16 = 0x35
        static let returnImmediate: UInt16 = 0x06
        static let copyAToX: UInt16 = 0x07
        static let copyXToA: UInt16 = 0x87
    }

    struct Assembler {
        enum Item {
            case instruction(code: UInt16, k: UInt32)
            /// A conditional jump: on true to `whenTrue`, else to `whenFalse` (nil: the next instruction).
            case branch(code: UInt16, k: UInt32, whenTrue: Label?, whenFalse: Label?)
            case jump(Label)
            case label(Label)
        }

        var items: [Item] = []

        mutating func op(_ code: UInt16, _ k: UInt32 = 0) { items.append(.instruction(code: code, k: k)) }
        mutating func branch(
            _ code: UInt16, _ k: UInt32 = 0, true whenTrue: Label? = nil, false whenFalse: Label? = nil
        ) {
            items.append(.branch(code: code, k: k, whenTrue: whenTrue, whenFalse: whenFalse))
        }
        mutating func label(_ label: Label) { items.append(.label(label)) }

        /// Sorts out what the program judges, leaving X and the scratch words set for the walk.
        mutating func emitPreamble() {
            // The kernel's checker follows scratch words linearly, also past a `ret` into the
            // walk: stored once here, they count as set on every path.
            op(Opcode.store, Scratch.end)
            op(Opcode.store, Scratch.offset)
            op(Opcode.loadLength)
            // Shorter than a legacy report with no data: nothing to judge, and no load may fail
            // (a load past the end makes the kernel drop the packet).
            branch(Opcode.jumpGreaterOrEqualImmediate, Offset.legacyData + 1, false: .pass)
            op(Opcode.loadByteAbsolute, Offset.eventCode)
            branch(Opcode.jumpEqualImmediate, UInt32(HCIEventCode.leMeta), false: .pass)
            op(Opcode.loadByteAbsolute, Offset.reportCount)
            branch(Opcode.jumpEqualImmediate, 1, false: .pass)
            op(Opcode.loadByteAbsolute, Offset.subevent)
            branch(Opcode.jumpEqualImmediate, UInt32(LESubevent.advertisingReport), true: .legacy)
            branch(
                Opcode.jumpEqualImmediate, UInt32(LESubevent.extendedAdvertisingReport), true: .extended, false: .pass)

            label(.legacy)
            // An event type the decoder refuses is malformed: it must reach the decoder.
            op(Opcode.loadByteAbsolute, Offset.legacyEventType)
            branch(Opcode.jumpGreaterImmediate, 4, true: .pass)
            emitLengths(dataLength: Offset.legacyDataLength, data: Offset.legacyData, trailing: 1)

            label(.extended)
            op(Opcode.loadLength)
            branch(Opcode.jumpGreaterOrEqualImmediate, Offset.extendedData, false: .pass)
            // Legacy PDU (bit 4) with its data complete (bits 5 and 6 clear).
            op(Opcode.loadByteAbsolute, Offset.extendedEventType)
            op(Opcode.andImmediate, 0x70)
            branch(Opcode.jumpEqualImmediate, 0x10, false: .pass)
            emitLengths(dataLength: Offset.extendedDataLength, data: Offset.extendedData, trailing: 0)

            // Behind every jump to it: classic BPF jumps forward only.
            label(.pass)
            op(Opcode.returnImmediate, HCIReportFilter.keep)
        }

        /// Checks that data of at most 31 bytes at `data`, then `trailing` bytes, end the packet
        /// exactly as its parameter length says; then starts the walk at `data`.
        private mutating func emitLengths(dataLength: UInt32, data: UInt32, trailing: UInt32) {
            op(Opcode.loadByteAbsolute, dataLength)
            branch(Opcode.jumpGreaterImmediate, 31, true: .pass)
            op(Opcode.addImmediate, data + trailing)
            op(Opcode.copyAToX)
            op(Opcode.loadLength)
            branch(Opcode.jumpEqualX, false: .pass)
            op(Opcode.loadByteAbsolute, Offset.parameterLength)
            op(Opcode.addImmediate, 3)
            branch(Opcode.jumpEqualX, false: .pass)
            op(Opcode.copyXToA)
            op(Opcode.addImmediate, UInt32(bitPattern: -Int32(trailing)))
            op(Opcode.store, Scratch.end)
            op(Opcode.loadImmediate, data)
            op(Opcode.store, Scratch.offset)
            op(Opcode.copyAToX)
            items.append(.jump(.walk))
        }

        /// The AD walk, unrolled: X and `Scratch.offset` hold the current structure's offset.
        mutating func emitWalk(companyID: UInt16) {
            let swappedCompany = UInt32(companyID.byteSwapped)
            label(.walk)
            for step in 0..<HCIReportFilter.maxStructures {
                label(.step(step))
                op(Opcode.loadMemory, Scratch.end)
                // Every byte walked: no GeoRacing structure.
                branch(Opcode.jumpGreaterX, false: .stepDrop(step))
                op(Opcode.loadByteIndexed, 0)
                // A zero length ends the significant part: the decoder reads no further.
                branch(Opcode.jumpEqualImmediate, 0, true: .stepDrop(step))
                op(Opcode.store, Scratch.length)
                op(Opcode.addX)
                op(Opcode.addImmediate, 1)
                op(Opcode.store, Scratch.next)
                op(Opcode.loadXMemory, Scratch.end)
                // The structure overruns the data: malformed, for the decoder to count.
                branch(Opcode.jumpGreaterX, true: .stepPass(step))
                op(Opcode.loadXMemory, Scratch.offset)
                op(Opcode.loadByteIndexed, 1)
                branch(Opcode.jumpEqualImmediate, UInt32(ADType.manufacturerSpecificData), false: .stepNext(step))
                op(Opcode.loadMemory, Scratch.length)
                branch(Opcode.jumpGreaterOrEqualImmediate, 3, false: .stepNext(step))
                op(Opcode.loadHalfIndexed, 2)
                branch(Opcode.jumpEqualImmediate, swappedCompany, true: .stepPass(step), false: .stepNext(step))
                label(.stepNext(step))
                op(Opcode.loadMemory, Scratch.next)
                op(Opcode.store, Scratch.offset)
                op(Opcode.copyAToX)
                items.append(.jump(.step(step + 1)))
                label(.stepPass(step))
                op(Opcode.returnImmediate, HCIReportFilter.keep)
                label(.stepDrop(step))
                op(Opcode.returnImmediate, 0)
            }
            // Not reached with data of at most 31 bytes; whatever cannot be judged passes.
            label(.step(HCIReportFilter.maxStructures))
            op(Opcode.returnImmediate, HCIReportFilter.keep)
        }

        /// The instructions with every label resolved to a forward offset. Conditional jumps
        /// reach at most 255 instructions: each step keeps its own returns close by. A jump
        /// backwards or too far is a bug in this file: its kernel tests catch it.
        func assembled() -> [SocketFilterInstruction] {
            var positions: [Label: Int] = [:]
            var position = 0
            for item in items {
                if case .label(let label) = item { positions[label] = position } else { position += 1 }
            }
            var program: [SocketFilterInstruction] = []
            program.reserveCapacity(position)
            for item in items {
                let here = program.count
                func distance(_ label: Label?) -> Int {
                    guard let label else { return 0 }
                    let distance = (positions[label] ?? -1) - here - 1
                    assert(distance >= 0, "label \(label) is not ahead of instruction \(here)")
                    return distance
                }
                switch item {
                case .label:
                    continue
                case .instruction(let code, let k):
                    program.append(SocketFilterInstruction(code: code, k: k))
                case .jump(let label):
                    program.append(
                        SocketFilterInstruction(code: Opcode.jumpAlways, k: UInt32(clamping: distance(label))))
                case .branch(let code, let k, let whenTrue, let whenFalse):
                    assert(max(distance(whenTrue), distance(whenFalse)) <= 255, "a jump from \(here) is too far")
                    program.append(
                        SocketFilterInstruction(
                            code: code, jumpIfTrue: UInt8(clamping: distance(whenTrue)),
                            jumpIfFalse: UInt8(clamping: distance(whenFalse)), k: k))
                }
            }
            return program
        }
    }
}
