/// A binary min-heap of (time, element): what comes due first on top. Entries are never updated in
/// place; the owner skips the ones it no longer wants when they come up (`RaceRecorder`).
struct DeadlineHeap<Element: Sendable>: Sendable {
    private var heap: [(time: Int64, element: Element)] = []

    var count: Int { heap.count }
    var first: (time: Int64, key: Element)? { heap.first.map { ($0.time, $0.element) } }

    mutating func insert(_ entry: (Int64, Element)) {
        heap.append((entry.0, entry.1))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].time < heap[parent].time else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeFirst() {
        guard !heap.isEmpty else { return }
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].time < heap[smallest].time { smallest = left }
            if right < heap.count, heap[right].time < heap[smallest].time { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }

    /// Replaces the contents with `entries` (dropping the stale ones the owner no longer wants).
    mutating func rebuild(_ entries: some Sequence<(Int64, Element)>) {
        heap = []
        for entry in entries { insert(entry) }
    }
}
