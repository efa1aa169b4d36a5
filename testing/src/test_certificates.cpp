#include <redcoord/core/errors.hpp>
#include <redcoord/testing/process.hpp>
#include <redcoord/testing/test_certificates.hpp>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace redcoord::testing {
namespace {

void run(const fs::path& dir, std::vector<std::string> argv) {
    process_options po;
    po.output_file = (dir / "openssl.log").string();
    const std::string shown = argv.size() > 1 ? argv[0] + " " + argv[1] : argv[0];
    process p(std::move(argv), po);
    if (p.wait() != 0)
        throw error("test certificates: '" + shown + "' failed (see " + po.output_file + ")");
}

// A new EC P-256 key and a certificate request for `cn`.
void request(const fs::path& dir, const std::string& name, const std::string& cn) {
    run(dir, {"openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
              "-nodes", "-keyout", (dir / (name + ".key")).string(), "-out",
              (dir / (name + ".csr")).string(), "-subj", "/CN=" + cn});
}

cert_pair self_signed_ca(const fs::path& dir, const std::string& name) {
    cert_pair p{dir / (name + ".crt"), dir / (name + ".key")};
    run(dir, {"openssl",
              "req",
              "-x509",
              "-newkey",
              "ec",
              "-pkeyopt",
              "ec_paramgen_curve:prime256v1",
              "-nodes",
              "-keyout",
              p.key.string(),
              "-out",
              p.cert.string(),
              "-days",
              "3650",
              "-subj",
              "/CN=" + name,
              "-addext",
              "basicConstraints=critical,CA:TRUE",
              "-addext",
              "keyUsage=critical,keyCertSign,cRLSign"});
    return p;
}

// `openssl ca` rather than `openssl x509 -req`: only it sets a start and end date in the past.
void write_ca_config(const fs::path& dir) {
    fs::create_directories(dir / "issued");
    std::ofstream(dir / "index.txt").flush();
    std::ofstream(dir / "serial") << "1000\n";
    std::ofstream f(dir / "ca.cnf");
    f << "[ ca ]\ndefault_ca = test_ca\n"
      << "[ test_ca ]\n"
      << "database = " << (dir / "index.txt").string() << "\n"
      << "new_certs_dir = " << (dir / "issued").string() << "\n"
      << "serial = " << (dir / "serial").string() << "\n"
      << "default_md = sha256\npolicy = any_name\nunique_subject = no\ncopy_extensions = none\n"
      << "[ any_name ]\ncommonName = supplied\n"
      // Redis presents its server certificate as a client one too (replication, Sentinel).
      << "[ server ]\nsubjectAltName = DNS:localhost,IP:127.0.0.1\nextendedKeyUsage = "
         "serverAuth,clientAuth\n"
      << "[ client ]\nextendedKeyUsage = clientAuth\n"
      << "[ wrong_host ]\nsubjectAltName = DNS:other.example\nextendedKeyUsage = "
         "serverAuth,clientAuth\n";
    if (!f) throw error("test certificates: cannot write " + (dir / "ca.cnf").string());
}

cert_pair sign(const fs::path& dir, const cert_pair& ca, const std::string& name,
               const std::string& cn, const std::string& extensions,
               std::vector<std::string> dates) {
    request(dir, name, cn);
    cert_pair p{dir / (name + ".crt"), dir / (name + ".key")};
    std::vector<std::string> argv{"openssl",     "ca",
                                  "-batch",      "-notext",
                                  "-config",     (dir / "ca.cnf").string(),
                                  "-cert",       ca.cert.string(),
                                  "-keyfile",    ca.key.string(),
                                  "-extensions", extensions,
                                  "-in",         (dir / (name + ".csr")).string(),
                                  "-out",        p.cert.string()};
    argv.insert(argv.end(), dates.begin(), dates.end());
    run(dir, std::move(argv));
    return p;
}

}  // namespace

test_certificates::test_certificates() {
    std::string tmpl = (fs::temp_directory_path() / "redcoord-tls-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw error("mkdtemp failed");
    dir_ = tmpl;
    try {
        ca_ = self_signed_ca(dir_, "ca");
        foreign_ = self_signed_ca(dir_, "foreign-ca");
        write_ca_config(dir_);
        const std::vector<std::string> valid{"-days", "3650"};
        server_ = sign(dir_, ca_, "server", "localhost", "server", valid);
        client_ = sign(dir_, ca_, "client", "redcoord-client", "client", valid);
        wrong_host_ = sign(dir_, ca_, "wrong-host", "other.example", "wrong_host", valid);
        expired_ = sign(dir_, ca_, "expired", "localhost", "server",
                        {"-startdate", "20200101000000Z", "-enddate", "20200102000000Z"});
        ca_dir_ = dir_ / "ca-dir";
        fs::create_directories(ca_dir_);
        fs::copy_file(ca_.cert, ca_dir_ / "ca.pem");
        run(dir_, {"openssl", "rehash", ca_dir_.string()});
    } catch (...) {
        std::error_code ec;
        fs::remove_all(dir_, ec);
        throw;
    }
}

test_certificates::~test_certificates() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
}

}  // namespace redcoord::testing
