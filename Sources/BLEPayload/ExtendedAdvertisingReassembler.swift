/// Joins "incomplete, more data to come" extended-advertising fragments per
/// (address, SID), up to 1650 bytes each, in a fixed number of slots whose
/// buffers are allocated once.
///
/// A class, because it owns its buffer: every reference sees the one state. `HCIEventDecoder`
/// keeps its value semantics by copying it before mutating a shared one (`copy()`).
final class ExtendedAdvertisingReassembler {
    static let maxLength = 1650

    struct Key: Hashable {
        var address: UInt64
        var addressType: UInt8
        var sid: UInt8
    }

    private struct Slot {
        var key: Key?
        var length = 0
        var overflowed = false
        var lastUsed: UInt64 = 0
    }

    @exclusivity(unchecked) private(set) var fragmentsHeld = 0
    @exclusivity(unchecked) private(set) var reportsReassembled = 0
    @exclusivity(unchecked) private(set) var chainsDropped = 0
    @exclusivity(unchecked) private var slots: [Slot]
    private let storage: UnsafeMutableRawBufferPointer
    @exclusivity(unchecked) private var clock: UInt64 = 0

    init(slots count: Int) {
        let count = max(1, count)
        slots = Array(repeating: Slot(), count: count)
        storage = UnsafeMutableRawBufferPointer.allocate(byteCount: count * Self.maxLength, alignment: 8)
    }

    deinit { storage.deallocate() }

    /// An independent reassembler holding the same chains and counts.
    func copy() -> ExtendedAdvertisingReassembler {
        let copy = ExtendedAdvertisingReassembler(slots: slots.count)
        copy.slots = slots
        copy.clock = clock
        copy.fragmentsHeld = fragmentsHeld
        copy.reportsReassembled = reportsReassembled
        copy.chainsDropped = chainsDropped
        if let source = storage.baseAddress, let target = copy.storage.baseAddress {
            target.copyMemory(from: source, byteCount: storage.count)
        }
        return copy
    }

    func hasPending(_ key: Key) -> Bool {
        slots.contains { $0.key == key }
    }

    /// Appends a fragment. Returns false when the chain could not be held
    /// (it overflowed and was dropped), in which case the caller delivers it truncated.
    func hold(_ key: Key, _ data: UnsafeRawBufferPointer) -> Bool {
        clock += 1
        let index = slotIndex(for: key)
        append(data, to: index)
        slots[index].lastUsed = clock
        fragmentsHeld += 1
        if slots[index].overflowed {
            slots[index] = Slot()
            chainsDropped += 1
            return false
        }
        return true
    }

    /// Appends the final fragment and hands the joined data to `body`.
    func complete(
        _ key: Key, _ data: UnsafeRawBufferPointer,
        _ body: (UnsafeRawBufferPointer, Bool) -> Void
    ) {
        guard let index = slots.firstIndex(where: { $0.key == key }) else { return }
        append(data, to: index)
        let start = index * Self.maxLength
        let joined = UnsafeRawBufferPointer(rebasing: storage[start..<start + slots[index].length])
        reportsReassembled += 1
        body(joined, slots[index].overflowed)
        slots[index] = Slot()
    }

    private func slotIndex(for key: Key) -> Int {
        if let index = slots.firstIndex(where: { $0.key == key }) { return index }
        if let index = slots.firstIndex(where: { $0.key == nil }) {
            slots[index].key = key
            return index
        }
        var oldest = 0
        for index in slots.indices where slots[index].lastUsed < slots[oldest].lastUsed { oldest = index }
        chainsDropped += 1
        slots[oldest] = Slot(key: key)
        return oldest
    }

    private func append(_ data: UnsafeRawBufferPointer, to index: Int) {
        let room = Self.maxLength - slots[index].length
        let count = min(room, data.count)
        if count < data.count { slots[index].overflowed = true }
        guard count > 0, let source = data.baseAddress, let base = storage.baseAddress else { return }
        (base + index * Self.maxLength + slots[index].length).copyMemory(from: source, byteCount: count)
        slots[index].length += count
    }
}
