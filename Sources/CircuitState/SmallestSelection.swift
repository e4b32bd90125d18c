extension Collection {
    /// The `limit` smallest elements by `areInIncreasingOrder`, in that order: what
    /// `sorted(by:).prefix(limit)` gives when the order is total, in O(n log limit) rather than a full sort
    /// (a listing cut to a few hundred entries of a table of thousands).
    func smallest(_ limit: Int, by areInIncreasingOrder: (Element, Element) -> Bool) -> [Element] {
        guard limit > 0 else { return [] }
        guard count > limit else { return sorted(by: areInIncreasingOrder) }
        // A max-heap of the `limit` smallest so far: its root is the one a newcomer must beat.
        var heap = Array(prefix(limit))
        func siftDown(_ start: Int) {
            var parent = start
            while true {
                let left = 2 * parent + 1
                guard left < heap.count else { return }
                var largest = left
                let right = left + 1
                if right < heap.count, areInIncreasingOrder(heap[left], heap[right]) { largest = right }
                guard areInIncreasingOrder(heap[parent], heap[largest]) else { return }
                heap.swapAt(parent, largest)
                parent = largest
            }
        }
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
        for element in dropFirst(limit) where areInIncreasingOrder(element, heap[0]) {
            heap[0] = element
            siftDown(0)
        }
        return heap.sorted(by: areInIncreasingOrder)
    }
}
