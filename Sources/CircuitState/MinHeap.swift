/// How a `MinHeap` orders its elements: whether one comes due before another.
protocol HeapOrdered {
    func precedes(_ other: Self) -> Bool
}

/// A binary min-heap: what comes due first on top. Elements are never updated in place: an owner
/// inserts a newer element and skips the superseded ones when they come up (the override table's
/// expiry marks, the race recorder's key deadlines).
struct MinHeap<Element: HeapOrdered> {
    private var heap: [Element] = []

    var count: Int { heap.count }
    var first: Element? { heap.first }

    mutating func insert(_ element: Element) {
        heap.append(element)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    @discardableResult
    mutating func removeFirst() -> Element? {
        guard let first = heap.first else { return nil }
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            siftDown(from: 0)
        }
        return first
    }

    /// Replaces the contents with `elements` (the ones the owner still wants).
    mutating func rebuild(_ elements: [Element]) {
        heap = elements
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

extension MinHeap: Sendable where Element: Sendable {}
