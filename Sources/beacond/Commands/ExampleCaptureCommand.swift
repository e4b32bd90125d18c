import ArgumentParser
import BLEPayload
import BeacondCore

struct ExampleCaptureCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "example-capture",
        abstract: "Write the bundled example capture: a race weekend's flag changes, as btsnoop.",
        shouldDisplay: true
    )

    @Option(help: ArgumentHelp("Sign every GeoRacing frame as v3 with these venue keys.", valueName: "file"))
    var keyFile: String?

    @Option(help: ArgumentHelp("The key id to sign with, 0 to 15 (default: the file's lowest).", valueName: "id"))
    var keyID: UInt8?

    @Argument(help: ArgumentHelp("Where to write the btsnoop (1002) capture.", valueName: "file"))
    var output: String

    func validate() throws {
        if keyID != nil && keyFile == nil { throw ValidationError("--key-id needs --key-file") }
        if let keyID, keyID > 15 { throw ValidationError("--key-id \(keyID): a key id is 0 to 15") }
    }

    func run() throws {
        var signer: BeaconSigner?
        if let keyring = try loadVenueKeys(keyFile, command: "example-capture") {
            // A key file holds at least one key (`VenueKeyFile.parse`).
            signer = BeaconSigner(keyring: keyring, sourceID: 1, keyID: keyID ?? keyring.keyIDs.first)
        }
        guard let bytes = ExampleCapture.raceWeekend(signer: signer) else {
            let day = DayNumber.format(ExampleCapture.day)
            let id = signer?.keyID.map(String.init) ?? ""
            printError("beacond example-capture: key file \(keyFile ?? ""): no key \(id) for \(day)")
            throw ExitCode(78)
        }
        try FileOutput.write(bytes, to: output)
    }
}
