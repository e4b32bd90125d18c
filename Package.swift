// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "beacond",
    products: [
        .executable(name: "beacond", targets: ["beacond"]),
        .library(name: "BLEPayload", targets: ["BLEPayload"]),
        .library(name: "CircuitState", targets: ["CircuitState"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio.git", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", exact: "2.37.6"),
        .package(url: "https://github.com/apple/swift-log.git", exact: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", exact: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", exact: "1.37.0"),
        .package(url: "https://github.com/jpsim/Yams.git", exact: "6.2.2"),
        .package(url: "https://github.com/apple/swift-system.git", exact: "1.8.1"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", exact: "2.0.1"),
        // `beacond run --metrics`: swift-metrics handles rendered by swift-prometheus (docs/metrics.md).
        .package(url: "https://github.com/apple/swift-metrics.git", exact: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", exact: "2.4.1"),
        // HMAC-SHA256, HKDF and SHA-256 for signed v3 frames (docs/security.md); already built for
        // swift-certificates (async-http-client), so no new code is compiled.
        .package(url: "https://github.com/apple/swift-crypto.git", exact: "4.5.2"),
    ],
    targets: [
        // Thin C shim over libbluetooth and libdbus: only what Swift cannot do cleanly.
        .systemLibrary(
            name: "CBlueZ",
            pkgConfig: "dbus-1",
            providers: [.apt(["libbluetooth-dev", "libdbus-1-dev"])]
        ),
        // General Linux calls Swift's Glibc module does not declare (eventfd, malloc_trim, accept4,
        // recvmmsg): header only, as NIO has CNIOLinux.
        .systemLibrary(name: "CLinux"),
        // libmosquitto, for the venue-wide MQTT publisher and `beacond venue` (docs/mqtt.md).
        .systemLibrary(
            name: "CMosquitto",
            pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]
        ),
        // Pure decoding core: bytes in, values out.
        .target(name: "BLEPayload"),
        // Pure fusion engine: overrides, TTLs, remote freshness, policies.
        .target(name: "CircuitState", dependencies: ["BLEPayload"]),
        // The clients as a library: the socket protocol's messages, the socket client, the kiosks,
        // `watch`, `venue` and the report printers, with what they share with the daemon (MQTT's
        // client, the small HTTP server, wake signals). No Bluetooth and no scanner: a kiosk-only
        // tool or a test links it without the daemon's edges.
        .target(
            name: "BeacondClient",
            dependencies: [
                "BLEPayload",
                "CircuitState",
                "CLinux",
                "CMosquitto",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // The daemon's edges as a library: scanner backends, the remote poller, the hub, the socket
        // server, config, logging and systemd integration, over BeacondClient's protocol model. The
        // executable, the benchmarks and the tests link it; `package` access is what they may reach.
        .target(
            name: "BeacondCore",
            dependencies: [
                "BeacondClient",
                "BLEPayload",
                "CircuitState",
                "CBlueZ",
                "CLinux",
                "CMosquitto",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The executable: `@main` and one command per subcommand.
        .executableTarget(
            name: "beacond",
            dependencies: [
                "BeacondClient",
                "BeacondCore",
                "BLEPayload",
                "CircuitState",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // Benchmarks: outside the release binary, figures also written to .build/bench/results.json.
        .target(name: "BenchmarkResults", path: "Benchmarks/BenchmarkResults"),
        .executableTarget(
            name: "beacond-bench",
            dependencies: ["BLEPayload", "CircuitState", "BenchmarkResults"],
            path: "Benchmarks/beacond-bench"
        ),
        .executableTarget(
            name: "beacond-daemon-bench",
            dependencies: [
                "BeacondCore",
                "BLEPayload",
                "CircuitState",
                "BenchmarkResults",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/beacond-daemon-bench"
        ),
        // One of each test helper (fake HCI controller, dbusmock bus, venue API server, recording
        // sinks, waits, temporary directories, seeded random, shared fixtures) for the test targets.
        // It reaches BeacondCore through `package` access; only test targets use `@testable`.
        .target(
            name: "BeacondTestSupport",
            dependencies: [
                "BeacondCore",
                "BLEPayload",
                "CircuitState",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/BeacondTestSupport",
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "BLEPayloadTests",
            dependencies: [
                "BLEPayload",
                "BeacondTestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "CircuitStateTests",
            dependencies: [
                "CircuitState",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "DaemonTests",
            dependencies: [
                "BeacondClient",
                "BeacondCore",
                "beacond",
                "BLEPayload",
                "CircuitState",
                "CBlueZ",
                "CLinux",
                "BeacondTestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOTestUtils", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["BLEPayload", "BeacondClient", "BeacondCore", "BeacondTestSupport", "beacond"]
        ),
    ]
)

// A warning in beacond's own code is an error, so no build prints one and a new one fails the build
// (`make lint` builds too). Dependencies' warnings stay SwiftPM's to hide.
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [.treatAllWarnings(as: .error)]
}
