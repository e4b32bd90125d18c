import ArgumentParser
import BLEPayload
import BeacondCore

struct ExampleCaptureCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "example-capture",
        abstract: "Write the bundled example capture: a race weekend's flag changes, as btsnoop.",
        shouldDisplay: true
    )

    @Argument(help: ArgumentHelp("Where to write the btsnoop (1002) capture.", valueName: "file"))
    var output: String

    func run() throws {
        let bytes = ExampleCapture.raceWeekend()
        try FileOutput.write(bytes, to: output)
    }
}
