/// pcapng records: section headers, interface descriptions, enhanced, simple and obsolete packets.
extension CaptureReader {
    func nextPcapng() throws(CaptureError) -> CapturePacket? {
        while true {
            guard try fill(1) else { return nil }
            try require(12)
            let rawType = window.loadUnaligned(as: UInt32.self)
            if UInt32(bigEndian: rawType) == 0x0A0D_0D0A {
                try readSectionHeader()
                continue
            }
            let type = u32(0)
            let length = Int(u32(4))
            guard length >= 12, length % 4 == 0 else {
                throw error(.badBlock("total length \(length) is not a multiple of 4 of at least 12"))
            }
            guard length <= Self.maxRecordLength else { throw error(.absurdLength(length)) }
            try require(length)
            guard Int(u32(length - 4)) == length else {
                throw error(.badBlock("trailing length \(u32(length - 4)) differs from leading length \(length)"))
            }
            defer {
                consume(length)
                recordIndex += 1
            }
            switch type {
            case 1:
                try readInterfaceDescription(length: length)
            case 6:
                return try enhancedPacket(length: length)
            case 3:
                return try simplePacket(length: length)
            case 2:
                return try obsoletePacket(length: length)
            default:
                continue // statistics, name resolution, custom and unknown blocks
            }
        }
    }

    func readSectionHeader() throws(CaptureError) {
        let rawBOM = window.loadUnaligned(fromByteOffset: 8, as: UInt32.self)
        switch UInt32(bigEndian: rawBOM) {
        case 0x1A2B_3C4D: bigEndian = true
        case 0x4D3C_2B1A: bigEndian = false
        default: throw error(.badMagic)
        }
        let length = Int(u32(4))
        guard length >= 28, length % 4 == 0 else {
            throw error(.badBlock("section header length \(length) is not a multiple of 4 of at least 28"))
        }
        guard length <= Self.maxRecordLength else { throw error(.absurdLength(length)) }
        try require(length)
        let major = u16(12)
        guard major == 1 else { throw error(.unsupportedVersion(UInt32(major))) }
        interfaces.removeAll(keepingCapacity: true)
        consume(length)
        recordIndex += 1
    }

    func readInterfaceDescription(length: Int) throws(CaptureError) {
        guard length >= 20 else { throw error(.badBlock("interface description of \(length) bytes")) }
        let network = UInt32(u16(8))
        guard let type = LinkType(pcapLinkType: network) else {
            throw error(.unknownLinkType(network))
        }
        var resolution = TimestampResolution.microseconds
        // Options: code u16, length u16, value padded to 4 bytes; code 0 ends them.
        var offset = 16
        while offset + 4 <= length - 4 {
            let code = u16(offset)
            let optionLength = Int(u16(offset + 2))
            if code == 0 { break }
            guard offset + 4 + optionLength <= length - 4 else {
                throw error(.badBlock("interface option \(code) at block byte \(offset) overruns the block"))
            }
            if code == 9, optionLength >= 1 {
                resolution = TimestampResolution(byte: window[offset + 4])
            }
            offset += 4 + (optionLength + 3) & ~3
        }
        interfaces.append(Interface(linkType: type, resolution: resolution))
    }

    func interface(_ id: Int) throws(CaptureError) -> Interface {
        guard id >= 0, id < interfaces.count else {
            throw error(.badBlock("packet names interface \(id), but only \(interfaces.count) are described"))
        }
        return interfaces[id]
    }

    func packetData(at offset: Int, captured: Int, blockLength: Int) throws(CaptureError)
        -> UnsafeRawBufferPointer
    {
        guard captured >= 0, offset + captured <= blockLength - 4 else {
            throw error(.badBlock("captured length \(captured) overruns the \(blockLength)-byte block"))
        }
        return UnsafeRawBufferPointer(rebasing: window[offset..<offset + captured])
    }

    func enhancedPacket(length: Int) throws(CaptureError) -> CapturePacket {
        guard length >= 32 else { throw error(.badBlock("enhanced packet block of \(length) bytes")) }
        let interface = try interface(Int(u32(8)))
        let stamp = UInt64(u32(12)) << 32 | UInt64(u32(16))
        let bytes = try packetData(at: 28, captured: Int(u32(20)), blockLength: length)
        return CapturePacket(
            index: recordIndex, offset: position, timestamp: try unixMicros(stamp, resolution: interface.resolution),
            linkType: interface.linkType, flags: 0, bytes: bytes)
    }

    func unixMicros(_ stamp: UInt64, resolution: TimestampResolution) throws(CaptureError) -> Int64 {
        guard let micros = resolution.microseconds(stamp) else {
            throw error(.timestampOutOfRange("\(stamp) units of \(resolution) exceed Int64 µs since 1970"))
        }
        return micros
    }

    func simplePacket(length: Int) throws(CaptureError) -> CapturePacket {
        guard length >= 16 else { throw error(.badBlock("simple packet block of \(length) bytes")) }
        let interface = try interface(0)
        let captured = min(Int(u32(8)), length - 16)
        let bytes = try packetData(at: 12, captured: captured, blockLength: length)
        return CapturePacket(
            index: recordIndex, offset: position, timestamp: 0, linkType: interface.linkType,
            flags: 0, bytes: bytes)
    }

    func obsoletePacket(length: Int) throws(CaptureError) -> CapturePacket {
        guard length >= 32 else { throw error(.badBlock("packet block of \(length) bytes")) }
        let interface = try interface(Int(u16(8)))
        let stamp = UInt64(u32(12)) << 32 | UInt64(u32(16))
        let bytes = try packetData(at: 28, captured: Int(u32(20)), blockLength: length)
        return CapturePacket(
            index: recordIndex, offset: position, timestamp: try unixMicros(stamp, resolution: interface.resolution),
            linkType: interface.linkType, flags: 0, bytes: bytes)
    }
}
