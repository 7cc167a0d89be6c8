-- The seed workload W1 (docs: ../shared/seeds/000_53c479d8be174a1b.txt), verbatim.
-- Run it with: walden sql walden-data --wal -f examples/seed.sql
create table demo as select generate_series a,generate_series b,generate_series c,generate_series d,generate_series e,generate_series f,lpad('x',100,'x') g from generate_series(0,0);
checkpoint;
insert into demo select generate_series a,generate_series b,generate_series c,generate_series d,generate_series e,generate_series f,lpad('x',100,'x') g from generate_series(1,1000000);
checkpoint;
update demo set b=b+1;
checkpoint;
update demo set b=b+1 where mod(a,10)=1;
checkpoint;
delete from demo;
checkpoint;
vacuum demo;
drop table demo;
