// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "beacond",
    products: [
        .executable(name: "beacond", targets: ["beacond"]),
        .library(name: "BLEPayload", targets: ["BLEPayload"]),
        .library(name: "CircuitState", targets: ["CircuitState"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
    ],
    targets: [
        // Thin C shim over libbluetooth and libdbus: only what Swift cannot do cleanly.
        .systemLibrary(
            name: "CBlueZ",
            pkgConfig: "dbus-1",
            providers: [.apt(["libbluetooth-dev", "libdbus-1-dev"])]
        ),
        // Pure decoding core: bytes in, values out.
        .target(name: "BLEPayload"),
        // Pure fusion engine: overrides, TTLs, remote freshness, policies.
        .target(name: "CircuitState", dependencies: ["BLEPayload"]),
        // The executable and its edges.
        .executableTarget(
            name: "beacond",
            dependencies: [
                "BLEPayload",
                "CircuitState",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "beacond-bench",
            dependencies: ["BLEPayload"],
            path: "Benchmarks/beacond-bench"
        ),
        .testTarget(
            name: "BLEPayloadTests",
            dependencies: [
                "BLEPayload",
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
            name: "EndToEndTests",
            dependencies: ["BLEPayload", "beacond"]
        ),
    ]
)
