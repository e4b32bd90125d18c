import Glibc
import Synchronization

/// The kiosk's voice (docs/kiosk.md, "The voice"): renders each announcement with espeak-ng, one
/// WAV per language, joins them after the alarm, and plays the whole with aplay, or writes it to a
/// folder (`--speak-to`). It runs on a thread of its own, which waits in poll(2) between
/// announcements and in waitpid(2) for its programs.
///
/// Nothing queues: a new announcement replaces one not yet started and cuts off the one being
/// rendered or played (its program is killed). An evacuation is said again every `repeatEvery`
/// while it is the latest announcement. A missing program or audio device is logged once, and the
/// kiosk's screen goes on regardless.
package final class KioskSpeaker: Sendable {
    /// Where announcements go.
    package enum Output: Hashable, Sendable {
        /// Played by aplay on this ALSA device (nil: aplay's default).
        case device(String?)
        /// Written as `announcement-NNNN-FLAG.wav` (and `.txt`, the words) into this folder.
        case directory(String)
    }

    package struct Configuration: Sendable {
        package var output: Output
        /// Microseconds between an evacuation's repeats.
        package var repeatEvery: Int64
        package var espeak = "espeak-ng"
        package var player = "aplay"

        package init(output: Output, repeatEvery: Int64) {
            self.output = output
            self.repeatEvery = repeatEvery
        }
    }

    private struct Mailbox {
        var pending: KioskAnnouncement?
        /// Counts announcements handed over: the renderer stops when it changes.
        var generation = 0
        var running: ChildProcess?
        var stopped = false
    }

    let configuration: Configuration
    private let mailbox = Mutex(Mailbox())
    private let wake: WakeSignal
    /// Signalled by the thread when it has ended and removed `scratch`.
    private let ended: WakeSignal
    private let started = Atomic<Bool>(false)
    /// The speaker's own folder under /tmp for espeak-ng's input and output, removed at `stop()`.
    package let scratch: String
    private let log: @Sendable (String) -> Void
    /// Failures already logged: each once.
    private let logged = Mutex(Set<String>())
    /// Announcements written (`.directory`) or played to their end.
    private let count = Atomic<Int>(0)
    /// Announcements numbered for `.directory`.
    private let numbered = Atomic<Int>(0)

    /// `log` gets one line per new kind of failure. Throws when no scratch folder or eventfd can be
    /// made, or, for `.directory`, the folder cannot be created.
    package init(configuration: Configuration, log: @escaping @Sendable (String) -> Void) throws(SetupError) {
        self.configuration = configuration
        self.log = log
        do throws(WakeSignal.Failure) {
            wake = try WakeSignal()
            ended = try WakeSignal()
        } catch {
            throw .eventfd(error.errno)
        }
        var template = Array("/tmp/beacond-voice-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw .scratch(errno) }
        scratch = String(cString: made)
        if case .directory(let folder) = configuration.output {
            guard Self.makeFolder(folder) else {
                let code = errno
                Self.removeFlatFolder(scratch)
                throw .folder(folder, code)
            }
        }
    }

    package enum SetupError: Error, CustomStringConvertible {
        case eventfd(Int32)
        case scratch(Int32)
        case folder(String, Int32)

        package var description: String {
            switch self {
            case .eventfd(let code): "cannot make an eventfd: \(errnoText(code))"
            case .scratch(let code): "cannot make a scratch folder in /tmp: \(errnoText(code))"
            case .folder(let folder, let code): "cannot create \(TerminalText.escaped(folder)): \(errnoText(code))"
            }
        }
    }

    /// Starts the voice's thread. When it cannot start, the scratch folder goes at once.
    package func start() throws(PosixThread.StartError) {
        started.store(true, ordering: .sequentiallyConsistent)
        do throws(PosixThread.StartError) {
            try BlockingThreadBridge.detach { [self] in
                run()
                Self.removeFlatFolder(scratch)
                ended.signal()
            }
        } catch {
            started.store(false, ordering: .sequentiallyConsistent)
            Self.removeFlatFolder(scratch)
            throw error
        }
    }

    /// Says `announcement` as soon as possible, cutting off whatever is being said.
    package func announce(_ announcement: KioskAnnouncement) {
        interrupt { $0.pending = announcement }
    }

    /// Stops the thread, cutting off what is being said, and waits (at most 2 s) for it to remove
    /// its scratch folder, so that a kiosk leaves nothing in /tmp however often it is restarted.
    package func stop() {
        interrupt { $0.stopped = true }
        if started.load(ordering: .sequentiallyConsistent) {
            ended.wait(micros: 2_000_000)
        } else {
            Self.removeFlatFolder(scratch)
        }
    }

    /// Hands `change` to the thread as a new generation: the program running now is killed and
    /// the thread woken.
    private func interrupt(_ change: (inout Mailbox) -> Void) {
        let running = mailbox.withLock { box -> ChildProcess? in
            change(&box)
            box.generation += 1
            return box.running
        }
        running?.terminate()
        wake.signal()
    }

    /// Announcements finished so far.
    package var finished: Int { count.load(ordering: .relaxed) }

    private func run() {
        var repeating: (announcement: KioskAnnouncement, due: Int64)?
        while true {
            let wait = repeating.map { $0.due - MonotonicClock.micros() } ?? 3_600_000_000
            if wake.wait(micros: wait) { wake.drain() }
            let (pending, generation, stopped) = mailbox.withLock { box in
                defer { box.pending = nil }
                return (box.pending, box.generation, box.stopped)
            }
            if stopped { return }
            let now = MonotonicClock.micros()
            let next: KioskAnnouncement
            if let pending {
                next = pending
            } else if let due = repeating, now >= due.due {
                next = due.announcement
            } else {
                continue
            }
            repeating = next.alarm ? (next, now + configuration.repeatEvery) : nil
            say(next, generation: generation)
        }
    }

    /// Renders and plays (or writes) one announcement, unless a newer one arrives meanwhile.
    private func say(_ announcement: KioskAnnouncement, generation: Int) {
        var audio: PCMAudio?
        var words: [String] = []
        for (index, spoken) in announcement.spoken.enumerated() where current(generation) {
            guard let speech = render(spoken, index: index, generation: generation) else { continue }
            if audio == nil {
                audio = PCMAudio(sampleRate: speech.sampleRate)
                if announcement.alarm {
                    audio?.append(.alarm(sampleRate: speech.sampleRate))
                    audio?.append(.silence(milliseconds: 300, sampleRate: speech.sampleRate))
                }
            }
            audio?.append(speech)
            audio?.append(.silence(milliseconds: 500, sampleRate: speech.sampleRate))
            words.append("\(spoken.language): \(spoken.text)")
        }
        guard current(generation) else { return }
        let whole = audio ?? (announcement.alarm ? .alarm(sampleRate: 22_050) : nil)
        guard let whole else { return }
        switch configuration.output {
        case .directory(let folder):
            let number = numbered.add(1, ordering: .relaxed).newValue
            let name = folder + "/announcement-" + String(number).zeroPadded(to: 4) + "-" + announcement.flag.rawValue
            let alarm = announcement.alarm ? ["alarm: two tones, 960 and 770 Hz"] : []
            if !write(whole.wav(), to: name + ".wav")
                || !write(Array((alarm + words).joined(separator: "\n").utf8) + [0x0A], to: name + ".txt")
            {
                report("write", "cannot write \(TerminalText.escaped(name)).wav: \(errnoText(errno))")
            } else {
                count.add(1, ordering: .relaxed)
            }
        case .device(let device):
            let file = scratch + "/announcement.wav"
            guard write(whole.wav(), to: file) else {
                return report("scratch", "cannot write \(file): \(errnoText(errno))")
            }
            let arguments = [configuration.player, "-q"] + (device.map { ["-D", $0] } ?? []) + [file]
            if run(arguments, stdout: nil, generation: generation) { count.add(1, ordering: .relaxed) }
        }
    }

    /// One language's words from espeak-ng; nil when it failed (logged) or was cut off.
    private func render(_ spoken: KioskAnnouncement.Spoken, index: Int, generation: Int) -> PCMAudio? {
        let text = scratch + "/words-\(index).txt"
        let wav = scratch + "/words-\(index).wav"
        guard write(Array(spoken.text.utf8), to: text) else {
            report("scratch", "cannot write \(text): \(errnoText(errno))")
            return nil
        }
        let voice = spoken.language.lowercased()
        guard run([configuration.espeak, "-v", voice, "-w", wav, "-f", text], stdout: nil, generation: generation)
        else { return nil }
        do {
            return try PCMAudio(wav: readRegularFile(wav, maxBytes: 64 << 20))
        } catch {
            report("wav \(voice)", "espeak-ng's WAV for \(voice) cannot be read: \(error)")
            return nil
        }
    }

    /// Runs a program to its end; false when it failed (logged once) or was cut off.
    private func run(_ arguments: [String], stdout: String?, generation: Int) -> Bool {
        let errors = scratch + "/stderr"
        let child: ChildProcess
        do throws(ChildProcess.Failure) {
            child = try ChildProcess.spawn(arguments, stdoutPath: stdout, stderrPath: errors)
        } catch {
            let advice = arguments[0] == configuration.espeak ? " (apt install espeak-ng)" : " (apt install alsa-utils)"
            report(arguments[0], "voice: \(error)\(advice); the screen goes on without it")
            return false
        }
        let current = mailbox.withLock { box -> Bool in
            box.running = child
            return box.generation == generation
        }
        if !current { child.terminate() }
        defer { mailbox.withLock { $0.running = nil } }
        do throws(ChildProcess.Failure) {
            try child.wait(program: arguments[0], stderrPath: errors)
            return true
        } catch {
            if case .killed = error, !self.current(generation) { return false }
            report("\(arguments[0]) \(error)", "voice: \(error); the screen goes on")
            return false
        }
    }

    private func current(_ generation: Int) -> Bool {
        mailbox.withLock { $0.generation == generation && !$0.stopped }
    }

    private func report(_ kind: String, _ line: String) {
        let first = logged.withLock { $0.insert(kind).inserted }
        if first { log(line) }
    }

    /// Writes `bytes` to `path` through a temporary name and a rename, so a reader never sees
    /// half a file.
    private func write(_ bytes: [UInt8], to path: String) -> Bool {
        let temporary = path + ".part"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return false }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                close(fd)
                return false
            }
            written += count
        }
        close(fd)
        return rename(temporary, path) == 0
    }

    /// Removes a folder that holds only files (the scratch folder).
    static func removeFlatFolder(_ path: String) {
        for entry in DirectoryEntries.list(path) ?? [] { unlink(path + "/" + entry.name) }
        rmdir(path)
    }

    /// `mkdir -p`, mode 0755.
    static func makeFolder(_ path: String) -> Bool {
        var prefix = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST { return false }
        }
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }
}
