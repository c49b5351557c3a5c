#!/bin/sh
# Makes the certificates of test/tls.test.ts (run here, from this folder; they are committed, and
# valid until 2126). Test material only: no key here protects anything.
#   ca.crt                 the authority that signed the server's and the client's certificates
#                          (its key is not kept: run this again for new ones)
#   other-ca.crt           an authority that signed neither (a server it does not vouch for)
#   server.crt/server.key  the test PostgreSQL's certificate, for the name localhost only (no IP address)
#   client.crt/client.key  a client certificate for the database user certuser, its key encrypted
#                          with the passphrase "client-key-secret"
#   revoked.crl            the authority's revocation list, revoking server.crt
set -e
days=36500
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days $days -subj "/CN=Svc test CA" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key -out other-ca.crt -days $days -subj "/CN=Svc other CA" 2>/dev/null
rm other-ca.key
openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost\n' > server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days $days -extfile server.ext 2>/dev/null
openssl req -newkey rsa:2048 -passout pass:client-key-secret -keyout client.key -out client.csr -subj "/CN=certuser" 2>/dev/null
openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days $days 2>/dev/null
# A certificate revocation list of the CA's that revokes the server's certificate.
printf '[ ca ]\ndefault_ca = test\n[ test ]\ndatabase = index.txt\ncrlnumber = crlnumber\ndefault_md = sha256\ndefault_crl_days = %s\n' $days > ca.cnf
: > index.txt
echo 01 > crlnumber
openssl ca -config ca.cnf -keyfile ca.key -cert ca.crt -revoke server.crt 2>/dev/null
openssl ca -config ca.cnf -keyfile ca.key -cert ca.crt -gencrl -out revoked.crl 2>/dev/null
rm -f server.csr client.csr server.ext ca.srl ca.key ca.cnf index.txt* crlnumber*
chmod 600 server.key client.key
