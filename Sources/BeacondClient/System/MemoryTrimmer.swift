import CLinux
import NIOCore

/// A second after connections close, hands the heap memory they freed back to the system: glibc
/// keeps freed memory for reuse, so the answers held for many clients (or a flood's) would
/// otherwise stay in the RSS. At most one trim is pending. Confined to `eventLoop`.
package final class MemoryTrimmer {
    private let eventLoop: any EventLoop
    private var scheduled = false

    package init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    package func schedule() {
        guard !scheduled else { return }
        scheduled = true
        eventLoop.assumeIsolated().scheduleTask(in: .seconds(1)) { [weak self] in
            self?.scheduled = false
            _ = malloc_trim(0)
        }
    }
}
