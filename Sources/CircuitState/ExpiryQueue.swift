/// A binary min-heap of expiry instants. Marks are never updated in place: a newer mark
/// supersedes an older one for the same entry, and the table skips marks whose revision is stale.
struct ExpiryQueue {
    struct Mark {
        var expiresAt: Int64
        var slot: Int
        var revision: UInt64

        func precedes(_ other: Mark) -> Bool {
            expiresAt != other.expiresAt ? expiresAt < other.expiresAt : revision < other.revision
        }
    }

    private var heap: [Mark] = []

    var count: Int { heap.count }
    var first: Mark? { heap.first }

    mutating func insert(_ mark: Mark) {
        heap.append(mark)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeFirst() -> Mark? {
        guard let first = heap.first else { return nil }
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            siftDown(from: 0)
        }
        return first
    }

    /// Replaces the contents with `marks`.
    mutating func rebuild(_ marks: [Mark]) {
        heap = marks
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) {
            siftDown(from: index)
        }
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { return }
            let right = left + 1
            var smallest = left
            if right < heap.count, heap[right].precedes(heap[left]) { smallest = right }
            guard heap[smallest].precedes(heap[parent]) else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
